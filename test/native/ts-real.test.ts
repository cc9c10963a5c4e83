// TsAnalyzer on real ffmpeg output: programmes, PIDs and codecs as ffprobe reports them, no
// errors on a clean CBR mux; and bad input (random bytes, truncated chunks) never crashes.
import { execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import t from 'tap';
import { TsAnalyzer } from '../../src/native/ts.ts';
import { makeLavfiTs } from '../helpers/ffmpeg.ts';
import { crc32mpeg, nullPacket, pat, psiPackets } from '../helpers/ts-craft.ts';

const MUXRATE = 2_000_000;
const DATAGRAM = 1316;

const dir = mkdtempSync(join(tmpdir(), 'sluice-native-'));
t.teardown(() => rmSync(dir, { recursive: true, force: true }));
const file = join(dir, 'cbr.ts');
makeLavfiTs(file, {
  size: '320x240',
  seconds: 4,
  gop: 25,
  muxrate: MUXRATE,
  extra: [
    ...['-metadata:s:a:0', 'language=fra', '-mpegts_service_id', '42'],
    ...['-metadata', 'service_name=Sluice Test', '-metadata', 'service_provider=Sluice'],
  ],
});
const data = readFileSync(file);

interface ProbeStream {
  id: string;
  codec_name: string;
  tags?: { language?: string };
}
const probe = JSON.parse(
  execFileSync('ffprobe', ['-v', 'error', '-show_programs', '-show_streams', '-of', 'json', file], {
    encoding: 'utf8',
  }),
) as {
  programs: Array<{
    program_num: number;
    pmt_pid: number;
    pcr_pid: number;
    tags?: Record<string, string>;
  }>;
  streams: ProbeStream[];
};

t.test('programmes, PIDs, codecs and languages match ffprobe; zero errors', async (t) => {
  const a = new TsAnalyzer({ psiPids: 'all' });
  const bytesPerMs = MUXRATE / 8 / 1000;
  let out = 0;
  for (let o = 0; o < data.length; o += DATAGRAM) {
    out += a.push(data.subarray(o, o + DATAGRAM), o / bytesPerMs).length;
  }
  const s = a.stats();
  t.equal(out, data.length, 'every byte comes back as aligned packets');
  t.equal(s.priority1, 0, JSON.stringify(s.tr101290));
  t.equal(s.priority2, 0, JSON.stringify(s.tr101290));
  t.ok(Math.abs(s.pcrBitrate - MUXRATE) / MUXRATE < 0.001, `PCR bitrate ${s.pcrBitrate}`);
  const progs = a.programs();
  t.equal(progs.length, probe.programs.length);
  const [mine, theirs] = [progs[0]!, probe.programs[0]!];
  t.equal(mine.pnr, theirs.program_num);
  t.equal(mine.pnr, 42);
  t.equal(mine.pmtPid, theirs.pmt_pid);
  t.equal(mine.pcrPid, theirs.pcr_pid);
  t.equal(mine.name, 'Sluice Test');
  t.equal(mine.provider, 'Sluice');
  t.same(
    mine.streams.map((x) => ({ pid: x.pid, codec: x.codec, language: x.language })),
    probe.streams.map((x) => ({
      pid: Number(x.id),
      codec: x.codec_name,
      language: x.tags?.language,
    })),
  );
  const tables = new Set(a.takeSections().map((x) => x.tableId));
  t.ok(
    tables.has(0x00) && tables.has(0x02) && tables.has(0x42),
    'PAT, PMT and SDT sections queued',
  );
});

t.test('an MPTS from ffmpeg -program: both programmes as ffprobe reports them', async (t) => {
  const mpts = join(dir, 'mpts.ts');
  execFileSync('ffmpeg', [
    '-hide_banner',
    '-loglevel',
    'error',
    '-y',
    '-f',
    'lavfi',
    '-i',
    'testsrc2=size=160x120:rate=25',
    '-f',
    'lavfi',
    '-i',
    'sine',
    '-f',
    'lavfi',
    '-i',
    'testsrc=size=160x120:rate=25',
    '-f',
    'lavfi',
    '-i',
    'sine=frequency=500',
    '-t',
    '2',
    '-map',
    '0:v',
    '-map',
    '1:a',
    '-map',
    '2:v',
    '-map',
    '3:a',
    '-c:v',
    'libx264',
    '-preset',
    'ultrafast',
    '-c:a',
    'mp2',
    '-program',
    'program_num=101:title=A:st=0:st=1',
    '-program',
    'program_num=202:title=B:st=2:st=3',
    '-f',
    'mpegts',
    mpts,
  ]);
  const probed = JSON.parse(
    execFileSync('ffprobe', ['-v', 'error', '-show_programs', '-of', 'json', mpts], {
      encoding: 'utf8',
    }),
  ) as {
    programs: Array<{
      program_num: number;
      pmt_pid: number;
      pcr_pid: number;
      tags?: { service_name?: string };
      streams: Array<{ id: string; codec_name: string }>;
    }>;
  };
  const a = new TsAnalyzer();
  const bytes = readFileSync(mpts);
  for (let o = 0; o < bytes.length; o += DATAGRAM) a.push(bytes.subarray(o, o + DATAGRAM), o / 100);
  const mine = a.programs().map((p) => ({
    pnr: p.pnr,
    pmtPid: p.pmtPid,
    pcrPid: p.pcrPid,
    name: p.name,
    streams: p.streams.map((s) => [s.pid, s.codec]),
  }));
  const theirs = probed.programs
    .map((p) => ({
      pnr: p.program_num,
      pmtPid: p.pmt_pid,
      pcrPid: p.pcr_pid,
      name: p.tags?.service_name,
      streams: p.streams.map((s) => [Number(s.id), s.codec_name]),
    }))
    .sort((x, y) => x.pnr - y.pnr);
  t.same(mine, theirs);
  t.equal(a.stats().tr101290.continuityCountError, 0);
  t.equal(a.stats().crcErrors, 0);
});

t.test('same result whatever the chunk sizes (reads of any alignment)', async (t) => {
  const a = new TsAnalyzer();
  let out = 0;
  let o = 0;
  let seed = 7;
  while (o < data.length) {
    seed = (seed * 1103515245 + 12345) % 2 ** 31;
    const n = 1 + (seed % 5000);
    out += a.push(data.subarray(o, o + n), o / 250).length;
    o += n;
  }
  t.equal(out, data.length);
  t.equal(a.stats().priority1, 0);
});

t.test('random bytes, truncated datagrams and flipped bits never crash', async (t) => {
  const a = new TsAnalyzer({ psiPids: 'all', dropNull: true });
  let seed = 12345;
  const rnd = () => {
    seed = (seed * 1103515245 + 12345) % 2 ** 31;
    return seed;
  };
  const ROUNDS = 3000;
  let misaligned = 0;
  for (let i = 0; i < ROUNDS; i++) {
    const kind = rnd() % 4;
    let chunk: Buffer;
    if (kind === 0) {
      chunk = Buffer.alloc(rnd() % 3000);
      for (let k = 0; k < chunk.length; k++) chunk[k] = rnd() & 0xff;
    } else {
      const at = (rnd() % Math.floor(data.length / 188)) * 188;
      chunk = Buffer.from(data.subarray(at, at + 1 + (rnd() % DATAGRAM)));
      if (kind === 2) for (let k = 0; k < 20; k++) chunk[rnd() % chunk.length] = rnd() & 0xff;
      if (kind === 3) for (let k = 0; k < chunk.length; k += 188) chunk[k] = 0x47;
    }
    const out = a.push(chunk, i);
    if (out.length % 188 !== 0) misaligned++;
    if (i % 500 === 0) {
      a.stats();
      a.programs();
      a.takeSections();
    }
  }
  t.equal(misaligned, 0, 'every output is whole packets');
  const s = a.stats();
  t.ok(s.syncLosses > 0 && s.junkBytes > 0, 'junk was seen and skipped');
  a.reset();
  // Good input after the junk is analysed cleanly.
  let out = 0;
  for (let o = 0; o < data.length; o += DATAGRAM)
    out += a.push(data.subarray(o, o + DATAGRAM), o / 250).length;
  t.equal(out + a.stats().nullPackets * 188, data.length, 'all packets but the nulls');
  t.equal(a.stats().tr101290.continuityCountError, 0);
});

t.test(
  'random sections with valid CRCs on the PSI/SI PIDs never crash the table parsers',
  async (t) => {
    const a = new TsAnalyzer({ psiPids: 'all' });
    let seed = 7;
    const rnd = () => {
      seed = (seed * 1103515245 + 12345) % 2 ** 31;
      return seed;
    };
    const ccs = new Map<number, { n: number }>();
    const cc = (pid: number) => {
      let c = ccs.get(pid);
      if (!c) {
        c = { n: 0 };
        ccs.set(pid, c);
      }
      return c;
    };
    const pad = [nullPacket(), nullPacket(), nullPacket()];
    const targets: Array<[number, number]> = [
      [0, 0x00],
      [1, 0x01],
      [0x100, 0x02],
      [0x11, 0x42],
      [0x12, 0x4e],
      [0x14, 0x73],
    ];
    const ROUNDS = 4000;
    for (let i = 0; i < ROUNDS; i++) {
      if (i % 50 === 0) {
        const table = pat([{ pnr: 1 + (rnd() % 4), pid: 0x100 }], rnd() % 32);
        a.push(Buffer.concat([...psiPackets(0, [table], cc(0)), ...pad]), i);
      }
      const [pid, table] = targets[rnd() % targets.length]!;
      const len = rnd() % (rnd() % 4 === 0 ? 1200 : 40);
      const s = Buffer.alloc(3 + len + 4);
      for (let k = 3; k < s.length; k++) s[k] = rnd() & 0xff;
      s[0] = table;
      s[1] = (rnd() % 2 ? 0x80 : 0) | 0x30 | ((len + 4) >> 8);
      s[2] = (len + 4) & 0xff;
      if (s.length > 5) s[5] = s[5]! | 1;
      s.writeUInt32BE(crc32mpeg(s.subarray(0, s.length - 4)), s.length - 4);
      a.push(Buffer.concat([...psiPackets(pid, [s], cc(pid)), ...pad]), i);
    }
    t.equal(a.stats().crcErrors, 0, 'every section passed its CRC and was parsed');
    t.ok(a.takeSections().length > 0);
  },
);
