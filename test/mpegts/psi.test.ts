// PSI sections byte for byte: PAT and PMT built here equal the sections of the independent test
// helper (test/helpers/ts-craft.ts) and of hand-written hex, parse ↔ build round trips, a PAT and
// PMT written by ffmpeg, the section-to-packets cut, and the track filter's PMT rewrite.
import t from 'tap';
import { crc32 } from '../../src/mpegts/crc.ts';
import {
  buildDescriptors,
  buildPat,
  buildPmt,
  buildSection,
  DESCRIPTOR_ISO639_LANGUAGE,
  PAT_TABLE_ID,
  type Pat,
  type Pmt,
  parseDescriptors,
  parsePat,
  parsePmt,
  parseSectionHeader,
  patPmtPids,
  pmtVideoPids,
  pmtWithoutStreams,
  sectionCrcOk,
  sectionLength,
  sectionPackets,
  sectionPacketsLength,
  writeSectionPackets,
} from '../../src/mpegts/psi.ts';
import { pat, pmt, psiPackets } from '../helpers/ts-craft.ts';

const hex = (s: string) => Buffer.from(s.replaceAll(' ', ''), 'hex');

/** ffmpeg's default PAT and the PMT of an MPEG-2 video + MPEG-1 audio programme. */
const FFMPEG_PAT = hex('00 b00d 0001 c1 00 00 0001 f000 2ab104b2');
const FFMPEG_PMT = hex('02 b017 0001 c1 00 00 e100 f000 02 e100 f000 03 e101 f000 f64a0355');

t.test('PAT: parse ffmpeg’s section, build it back byte for byte', async (t) => {
  t.ok(sectionCrcOk(FFMPEG_PAT));
  const p = parsePat(FFMPEG_PAT);
  t.same(p, {
    transportStreamId: 1,
    version: 0,
    currentNext: true,
    programs: [{ programNumber: 1, pid: 0x1000 }],
  });
  t.same(buildPat(p), FFMPEG_PAT);
});

t.test('PAT: built sections equal the test helper’s; network PID and round trip', async (t) => {
  const programs = [
    { programNumber: 1, pid: 0x100 },
    { programNumber: 7, pid: 0x1ffe },
  ];
  const built = buildPat({ transportStreamId: 0x1234, version: 5, currentNext: true, programs });
  const helper = pat(
    programs.map((p) => ({ pnr: p.programNumber, pid: p.pid })),
    5,
    0x1234,
  );
  t.same(built, helper);
  const withNit: Pat = {
    transportStreamId: 9,
    version: 31,
    currentNext: false,
    networkPid: 0x10,
    programs,
  };
  const s = buildPat(withNit);
  t.equal(
    s.subarray(0, 12).toString('hex'),
    '00b0150009fe000000' + '00e010',
    'header and NIT entry',
  );
  t.ok(sectionCrcOk(s));
  t.same(parsePat(s), withNit);
});

t.test('patPmtPids: one PID per programme number, the later entry winning', async (t) => {
  const s = buildPat({
    transportStreamId: 1,
    version: 0,
    currentNext: true,
    programs: [
      { programNumber: 1, pid: 0x100 },
      { programNumber: 2, pid: 0x200 },
      { programNumber: 1, pid: 0x300 },
      { programNumber: 3, pid: 0x200 },
    ],
  });
  t.same([...patPmtPids(parsePat(s))], [0x300, 0x200]);
});

t.test('PMT: parse ffmpeg’s section, build it back byte for byte', async (t) => {
  t.ok(sectionCrcOk(FFMPEG_PMT));
  const p = parsePmt(FFMPEG_PMT);
  t.equal(p.programNumber, 1);
  t.equal(p.pcrPid, 0x100);
  t.equal(p.programInfo.length, 0);
  t.same(
    p.streams.map((s) => [s.streamType, s.pid, s.descriptors.length]),
    [
      [0x02, 0x100, 0],
      [0x03, 0x101, 0],
    ],
  );
  t.same(buildPmt(p), FFMPEG_PMT);
  t.same(pmtVideoPids(FFMPEG_PMT), [0x100]);
});

t.test('PMT with descriptors: equal to the test helper’s, and a round trip', async (t) => {
  const helper = pmt(
    3,
    0x101,
    [
      { type: 0x1b, pid: 0x101 },
      { type: 0x0f, pid: 0x102, lang: 'eng' },
      { type: 0x06, pid: 0x103, descriptors: hex('56 05 656e67 09 88') },
    ],
    4,
  );
  const parsed = parsePmt(helper);
  t.same(
    parseDescriptors(parsed.streams[1]!.descriptors).map((d) => [d.tag, d.data.toString('hex')]),
    [[DESCRIPTOR_ISO639_LANGUAGE, '656e6700']],
  );
  const rebuilt: Pmt = {
    programNumber: 3,
    version: 4,
    currentNext: true,
    pcrPid: 0x101,
    programInfo: Buffer.alloc(0),
    streams: [
      { streamType: 0x1b, pid: 0x101, descriptors: Buffer.alloc(0) },
      {
        streamType: 0x0f,
        pid: 0x102,
        descriptors: buildDescriptors([{ tag: DESCRIPTOR_ISO639_LANGUAGE, data: hex('656e6700') }]),
      },
      { streamType: 0x06, pid: 0x103, descriptors: hex('56 05 656e67 09 88') },
    ],
  };
  t.same(buildPmt(rebuilt), helper);
  const withInfo: Pmt = { ...rebuilt, programInfo: hex('05 04 48444d56'), version: 9 };
  t.same(parsePmt(buildPmt(withInfo)), withInfo);
  t.same(pmtVideoPids(helper), [0x101]);
});

t.test('a descriptor running past its loop stops the reading', async (t) => {
  const list = parseDescriptors(hex('0a 04 656e6700 05 09 4143'));
  t.same(
    list.map((d) => d.tag),
    [0x0a],
  );
});

t.test('section header and generic build', async (t) => {
  const s = buildSection(
    {
      tableId: 0x42,
      tableIdExtension: 0xabcd,
      version: 3,
      currentNext: false,
      sectionNumber: 1,
      lastSectionNumber: 2,
      flags: 0xf0,
    },
    hex('0102'),
  );
  t.equal(s.subarray(0, 10).toString('hex'), '42f00babcdc601020102');
  t.equal(sectionLength(s), s.length - 3);
  t.same(parseSectionHeader(s), {
    tableId: 0x42,
    tableIdExtension: 0xabcd,
    version: 3,
    currentNext: false,
    sectionNumber: 1,
    lastSectionNumber: 2,
  });
  t.equal(crc32(s), 0);
  const bad = Buffer.from(s);
  bad[9] = bad[9]! ^ 1;
  t.notOk(sectionCrcOk(bad));
  t.notOk(sectionCrcOk(s.subarray(0, s.length - 1)), 'a section cut short');
});

t.test('sectionPackets cuts a section as the test helper does', async (t) => {
  const small = FFMPEG_PAT;
  t.same(sectionPackets(small, 0, 0), Buffer.concat(psiPackets(0, [small])));
  const streams = Array.from({ length: 80 }, (_, i) => ({ type: 0x0f, pid: 0x200 + i }));
  const big = pmt(1, 0x200, streams);
  t.ok(big.length > 2 * 184, 'spans three packets');
  const cc = { n: 14 };
  t.same(sectionPackets(big, 0x1000, 14), Buffer.concat(psiPackets(0x1000, [big], cc)));
});

t.test(
  'writeSectionPackets writes what sectionPackets cuts, in place, nothing around it',
  async (t) => {
    const streams = Array.from({ length: 80 }, (_, i) => ({ type: 0x0f, pid: 0x200 + i }));
    for (const s of [FFMPEG_PAT, pmt(1, 0x200, streams)]) {
      const want = sectionPackets(s, 0x12, 9);
      t.equal(sectionPacketsLength(s.length), want.length);
      const out = Buffer.alloc(want.length + 2 * 188, 0xaa); // stuffing bytes are written too
      t.equal(writeSectionPackets(s, 0x12, 9, out, 188), want.length);
      t.same(out.subarray(188, 188 + want.length), want);
      t.ok(
        out.subarray(0, 188).every((b) => b === 0xaa),
        'before it untouched',
      );
      t.ok(
        out.subarray(188 + want.length).every((b) => b === 0xaa),
        'after it untouched',
      );
    }
  },
);

t.test('pmtWithoutStreams keeps every other byte and fixes length and CRC', async (t) => {
  const s = pmt(1, 0x101, [
    { type: 0x1b, pid: 0x101 },
    { type: 0x0f, pid: 0x102, lang: 'eng' },
    { type: 0x0f, pid: 0x103, lang: 'fra' },
  ]);
  const out = pmtWithoutStreams(s, new Set([0x102]));
  t.same(
    out,
    pmt(1, 0x101, [
      { type: 0x1b, pid: 0x101 },
      { type: 0x0f, pid: 0x103, lang: 'fra' },
    ]),
  );
  t.same(pmtWithoutStreams(s, new Set()), s, 'nothing dropped: the same bytes');
});

t.test('PAT table id of the built section', async (t) => {
  t.equal(
    buildPat({ transportStreamId: 1, version: 0, currentNext: true, programs: [] })[0],
    PAT_TABLE_ID,
  );
});
