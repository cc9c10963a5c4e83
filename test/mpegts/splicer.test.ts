// Splicer: continuity counters stay monotonic per PID across a switch, PAT/PMT get a new
// version with a valid CRC, and the first packet of each PID after the splice is marked.
import t from 'tap';
import { crc32 } from '../../src/mpegts/crc.ts';
import { cc, hasAdaptation, payloadOffset, pid, TS_PACKET_SIZE } from '../../src/mpegts/packet.ts';
import { Splicer } from '../../src/mpegts/splicer.ts';
import { packet, pat, pmt, psiPackets } from '../helpers/ts-craft.ts';

/** An input: PAT + PMT + `n` video packets starting at continuity counter `startCc`. */
function input(n: number, startCc: number, version = 0): Buffer {
  const parts = [
    ...psiPackets(0, [pat([{ pnr: 1, pid: 0x1000 }], version)], { n: startCc }),
    ...psiPackets(0x1000, [pmt(1, 0x100, [{ type: 0x1b, pid: 0x100 }], version)], { n: startCc }),
  ];
  for (let i = 0; i < n; i++) {
    parts.push(
      packet({ pid: 0x100, cc: (startCc + i) & 15, payload: Buffer.alloc(184, i & 0xff) }),
    );
  }
  return Buffer.concat(parts);
}

/** A copy of `b` in an ArrayBuffer of its own. */
function onOwnMemory(b: Buffer): Buffer {
  const own = Buffer.allocUnsafeSlow(b.length);
  b.copy(own);
  return own;
}

function packets(b: Buffer): Buffer[] {
  const out: Buffer[] = [];
  for (let o = 0; o < b.length; o += TS_PACKET_SIZE) out.push(b.subarray(o, o + TS_PACKET_SIZE));
  return out;
}

function ccErrors(stream: Buffer): number {
  const last = new Map<number, number>();
  let errors = 0;
  for (const p of packets(stream)) {
    const id = pid(p);
    if ((p[3]! & 0x10) === 0) continue;
    const prev = last.get(id);
    if (prev !== undefined && ((prev + 1) & 15) !== cc(p)) errors++;
    last.set(id, cc(p));
  }
  return errors;
}

function sectionVersion(p: Buffer): { version: number; crcOk: boolean } {
  const s = payloadOffset(p) + 1 + p[payloadOffset(p)]!;
  const len = ((p[s + 1]! & 0x0f) << 8) | p[s + 2]!;
  return { version: (p[s + 5]! >> 1) & 31, crcOk: crc32(p, s, s + 3 + len) === 0 };
}

t.test('a switch keeps CC continuous, bumps PSI versions and marks the splice', async (t) => {
  const sp = new Splicer();
  const a = Buffer.from(sp.push(input(20, 0))); // a borrowed batch's output lasts one call
  sp.splice();
  const b = sp.push(input(20, 9)); // the new input's counters start elsewhere
  const out = Buffer.concat([a, b]);
  t.equal(ccErrors(out), 0, 'no continuity error introduced by the switch');
  const after = packets(b);
  t.equal(pid(after[0]!), 0, 'output resumes with the PAT');
  const patV = sectionVersion(after[0]!);
  t.equal(patV.version, 1, 'PAT version bumped');
  t.ok(patV.crcOk, 'PAT CRC rewritten');
  const pmtPkt = after.find((p) => pid(p) === 0x1000)!;
  t.equal(sectionVersion(pmtPkt).version, 1, 'PMT version bumped');
  t.ok(sectionVersion(pmtPkt).crcOk, 'PMT CRC rewritten');
  const video = after.filter((p) => pid(p) === 0x100);
  t.ok(hasAdaptation(video[0]!), 'adaptation field inserted');
  t.equal(video[0]![5]! & 0x80, 0x80, 'discontinuity_indicator set on the first video packet');
  t.equal(video[1]![5]! & 0x80, 0, 'the displaced-payload packet is not marked');
  t.notOk(hasAdaptation(video[2]!), 'later packets untouched');
  // The 184 payload bytes of the first packet survive, split over two packets.
  const first = video[0]!.subarray(payloadOffset(video[0]!));
  const carry = video[1]!.subarray(payloadOffset(video[1]!));
  t.equal(first.length + carry.length, 184);
  t.ok(Buffer.concat([first, carry]).equals(Buffer.alloc(184, 0)), 'payload bytes preserved');
});

t.test('packets before the new input PAT are held back after a splice', async (t) => {
  const sp = new Splicer();
  sp.push(input(5, 0));
  sp.splice();
  const junkFirst = Buffer.concat([
    packet({ pid: 0x100, cc: 3, payload: Buffer.alloc(184) }),
    input(3, 4),
  ]);
  const out = packets(sp.push(junkFirst));
  t.equal(pid(out[0]!), 0, 'starts at the PAT');
  t.equal(sp.stats.droppedWaitingPsi, 1);
});

t.test('an input PSI version change is passed on as a new output version', async (t) => {
  const sp = new Splicer();
  sp.push(input(2, 0, 5));
  const out = packets(sp.push(input(2, 5, 6)));
  t.equal(sectionVersion(out[0]!).version, 6, 'no splice: the input version is kept');
  sp.splice();
  const out2 = packets(sp.push(input(2, 0, 6)));
  t.equal(sectionVersion(out2[0]!).version, 7, 'splice: one above the last output version');
});

t.test('bitrate-mode 1 drops null packets', async (t) => {
  const sp = new Splicer();
  sp.dropNull = true;
  const nul = packet({ pid: 0x1fff, payload: Buffer.alloc(184) });
  const out = sp.push(Buffer.concat([input(2, 0), nul, nul]));
  t.equal(packets(out).filter((p) => pid(p) === 0x1fff).length, 0);
  t.equal(sp.stats.droppedNull, 2);
});

t.test('an owned batch is rewritten in place; a borrowed one is copied first', async (t) => {
  const s = new Splicer();
  s.push(input(3, 0)); // counters learnt
  s.splice();
  // Its own memory, not a slice of Node's shared pool: whether two small pooled buffers share
  // an ArrayBuffer depends on what was allocated before, so the check below would be luck.
  const borrowed = onOwnMemory(input(3, 7));
  const before = Buffer.from(borrowed);
  const lent = s.push(borrowed);
  t.same(borrowed, before, 'the caller’s (reusable) buffer is left as it was');
  t.not(lent.buffer, borrowed.buffer);
  t.equal(ccErrors(lent), 0);
  const out1 = Buffer.from(lent); // valid until the next push only
  const owned = Buffer.concat([packet({ pid: 0x100, cc: 10, payload: Buffer.alloc(184, 1) })]);
  const out2 = s.push(owned, true);
  t.equal(out2.buffer, owned.buffer, 'no copy: the output is the batch itself');
  t.equal(ccErrors(Buffer.concat([out1, out2])), 0, 'counters still continue');
});

t.test('dropping nulls from an owned batch moves the kept packets in place', async (t) => {
  const sp = new Splicer();
  sp.dropNull = true;
  sp.push(input(2, 0));
  const nul = packet({ pid: 0x1fff, payload: Buffer.alloc(184) });
  const video = (n: number) => packet({ pid: 0x100, cc: n, payload: Buffer.alloc(184, n) });
  // Larger than Node's pool size: the batch has an ArrayBuffer of its own, as a receive batch.
  const parts = Array.from({ length: 40 }, (_, i) => (i % 3 === 1 ? nul : video(i & 0x0f)));
  const batch = Buffer.concat(parts);
  const want = Buffer.concat(parts.filter((p) => p !== nul));
  const out = sp.push(batch, true);
  t.equal(out.buffer, batch.buffer, 'no new buffer for the batch');
  t.equal(out.byteOffset, batch.byteOffset);
  t.same(out, want, 'the non-null packets, in order, bytes intact');
});

t.test('borrowed batches are copied into one reused block, not a new buffer each', async (t) => {
  const sp = new Splicer();
  const first = sp.push(onOwnMemory(input(3, 0)));
  const block = first.buffer;
  const second = sp.push(onOwnMemory(input(3, 3)));
  t.equal(second.buffer, block, 'the same block for a batch of the same size');
  t.equal(ccErrors(Buffer.from(second)), 0);
  const smaller = sp.push(onOwnMemory(input(1, 6)));
  t.equal(smaller.buffer, block, 'and for a smaller one');
  t.equal(smaller.length, 3 * TS_PACKET_SIZE, 'PAT, PMT and one packet');
  const larger = sp.push(onOwnMemory(input(8, 7)));
  t.equal(larger.length, 10 * TS_PACKET_SIZE, 'a larger batch grows the block');
  t.equal(sp.push(onOwnMemory(input(2, 15))).buffer, larger.buffer, 'which is then reused');
});
