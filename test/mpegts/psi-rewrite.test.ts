// PAT/PMT sections spanning several packets get a new version and a correct CRC at a splice,
// including a CRC and a section header split across packets; a corrupt input section stays
// corrupt. The output is checked by the native analyzer (an independent section parser).
import t from 'tap';
import { crc32 } from '../../src/mpegts/crc.ts';
import { TS_PACKET_SIZE } from '../../src/mpegts/packet.ts';
import { PsiRewriter } from '../../src/mpegts/psi-rewrite.ts';
import { Splicer } from '../../src/mpegts/splicer.ts';
import { TsAnalyzer } from '../../src/native/ts.ts';
import { type EsDef, packet, pat, pmt } from '../helpers/ts-craft.ts';

/** Sections packed back to back on `pid`; a packet where a section starts gets PUSI and a
 *  pointer_field to it (ISO/IEC 13818-1 2.4.4.2). `lead` bytes of the first packet are stuffing. */
function packetize(pid: number, sections: Buffer[], cc = { n: 0 }): Buffer[] {
  const starts = new Set<number>();
  let at = 0;
  for (const s of sections) {
    starts.add(at);
    at += s.length;
  }
  const data = Buffer.concat(sections);
  const out: Buffer[] = [];
  let o = 0;
  while (o < data.length) {
    let first = -1;
    for (let k = o; k < Math.min(o + 183, data.length); k++) {
      if (starts.has(k)) {
        first = k;
        break;
      }
    }
    if (first >= 0) {
      const chunk = data.subarray(o, o + 183);
      const payload = Buffer.concat([Buffer.from([first - o]), chunk]);
      out.push(packet({ pid, cc: cc.n++ & 15, pusi: true, payload }));
      o += chunk.length;
    } else {
      out.push(packet({ pid, cc: cc.n++ & 15, payload: data.subarray(o, o + 184) }));
      o += 184;
    }
  }
  return out;
}

const PMT_PID = 0x1000;
/** 50 programmes: a 212-byte PAT, two packets. */
const programmes = Array.from({ length: 50 }, (_, i) => ({ pnr: i + 1, pid: PMT_PID + i }));
/** Elementary streams with long descriptors: a PMT of ~500 bytes (three packets). */
const streams: EsDef[] = Array.from({ length: 8 }, (_, i) => ({
  type: 0x06,
  pid: 0x100 + i,
  descriptors: Buffer.concat([Buffer.from([0x05, 50]), Buffer.alloc(50, 0x41 + i)]),
}));

function input(version: number, cc: number): Buffer {
  const c1 = { n: cc };
  const c2 = { n: cc };
  return Buffer.concat([
    ...packetize(0, [pat(programmes, version)], c1),
    ...packetize(PMT_PID, [pmt(1, 0x100, streams, version)], c2),
    packet({ pid: 0x100, cc, payload: Buffer.alloc(184, 1) }),
  ]);
}

function analyse(b: Buffer) {
  const a = new TsAnalyzer({ psiPids: [0, PMT_PID] });
  a.push(b, 0);
  return { sections: a.takeSections(), stats: a.stats(), programs: a.programs() };
}

t.test('multi-packet PAT and PMT are re-versioned across a splice', async (t) => {
  const inA = input(0, 0);
  t.ok(pat(programmes).length > 184 && pmt(1, 0x100, streams).length > 2 * 184, 'spans packets');
  const sp = new Splicer();
  const a = Buffer.from(sp.push(inA)); // a borrowed batch's output lasts until the next push
  sp.splice();
  const b = sp.push(input(0, 5)); // the backup also says version 0
  const before = analyse(a);
  t.same(
    before.sections.map((s) => (s.data[5]! >> 1) & 31),
    [0, 0],
    'first input: versions kept',
  );
  const after = analyse(b);
  t.equal(after.stats.crcErrors, 0, 'every output section passes its CRC');
  t.same(
    after.sections.map((s) => [s.pid, (s.data[5]! >> 1) & 31]),
    [
      [0, 1],
      [PMT_PID, 1],
    ],
    'PAT and PMT versions bumped after the splice',
  );
  t.equal(after.programs.length, 50, 'the whole PAT survived');
  t.equal(after.programs.find((p) => p.pnr === 1)?.streams.length, 8, 'the whole PMT survived');
  sp.splice();
  const c = analyse(sp.push(input(0, 9)));
  t.same(
    c.sections.map((s) => (s.data[5]! >> 1) & 31),
    [2, 2],
    'a second splice bumps again',
  );
});

t.test('section header and CRC split across packets', async (t) => {
  // Find a filler size that puts the PMT's 8-byte header across the packet boundary, and one
  // that splits its CRC, by packing a private section (table 0x80, ignored) before it.
  const target = pmt(1, 0x100, streams.slice(0, 1), 3);
  for (const [what, startAt] of [
    ['header', 183 - 4],
    ['crc', 183 - target.length + 2],
  ] as const) {
    const fillerLen = startAt;
    const body = Buffer.alloc(fillerLen - 3 - 5 - 4, 0x55);
    const filler = Buffer.from(crcSection(0x80, body));
    t.equal(filler.length, fillerLen, `${what}: filler size`);
    const seen: number[] = [];
    let completed: Buffer | null = null;
    const rw = new PsiRewriter({
      version: (tableId, inVer) => {
        if (tableId !== 0x02) return null;
        seen.push(inVer);
        return 9;
      },
      complete: (s) => {
        if (s[0] === 0x02) completed = s;
      },
    });
    const pkts = packetize(PMT_PID, [filler, target]);
    for (const p of pkts) rw.packet(p, 0);
    t.same(seen, [3], `${what}: version read across the boundary`);
    t.ok(completed, `${what}: section completed`);
    const out = completed as unknown as Buffer;
    t.equal((out[5]! >> 1) & 31, 9, `${what}: version rewritten`);
    t.equal(crc32(out), 0, `${what}: CRC valid`);
    const a = new TsAnalyzer({ psiPids: [PMT_PID] });
    // Null packets after: the analyzer locks on three syncs in a row.
    const nul = packet({ pid: 0x1fff, payload: Buffer.alloc(184) });
    a.push(Buffer.concat([...pkts, nul, nul, nul]), 0);
    const got = a.takeSections().filter((s) => s.tableId === 0x02);
    t.equal(got.length, 1, `${what}: the native parser reads the rewritten section`);
  }
});

t.test('a corrupt input section keeps its CRC error', async (t) => {
  const sp = new Splicer();
  sp.push(input(0, 0));
  sp.splice();
  const bad = input(0, 4);
  // Flip one byte inside the PMT's descriptors (second PMT packet).
  const pmtPackets: number[] = [];
  for (let o = 0; o < bad.length; o += TS_PACKET_SIZE) {
    if ((((bad[o + 1]! & 0x1f) << 8) | bad[o + 2]!) === PMT_PID) pmtPackets.push(o);
  }
  const at = pmtPackets[1]! + 100;
  bad[at] = bad[at]! ^ 0x01;
  const out = analyse(sp.push(bad));
  t.equal(out.stats.crcErrors, 1, 'the corrupt PMT still fails its CRC on output');
  t.same(
    out.sections.map((s) => s.pid),
    [0],
    'only the PAT passes',
  );
});

function crcSection(tableId: number, body: Buffer): Buffer {
  const len = 5 + body.length + 4;
  const s = Buffer.concat([
    Buffer.from([tableId, 0xb0 | (len >> 8), len & 0xff, 0, 1, 0xc1, 0, 0]),
    body,
    Buffer.alloc(4),
  ]);
  s.writeUInt32BE(crc32(s, 0, s.length - 4), s.length - 4);
  return s;
}
