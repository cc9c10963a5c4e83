// RTP header parsing and the sequencer: in-order and swapped packets, real gaps, and a sender
// restart with a new random sequence start (behind or ahead of the old one, same or new SSRC),
// which must resync at once instead of dropping packets as "late" or counting thousands lost.
import t from 'tap';
import { parseRtp, RtpSequencer } from '../../src/protocols/rtp/packet.ts';

function rtp(seq: number, ssrc: number, payload: number): Buffer {
  const b = Buffer.alloc(12 + 188);
  b[0] = 0x80;
  b[1] = 33;
  b.writeUInt16BE(seq & 0xffff, 2);
  b.writeUInt32BE(seq * 3600, 4);
  b.writeUInt32BE(ssrc, 8);
  b[12] = 0x47;
  b[13] = payload;
  return b;
}

function run(reorder: boolean, seqs: [number, number][]) {
  const out: number[] = [];
  const q = new RtpSequencer(reorder, (p) => out.push(p.payload[1]!));
  for (const [seq, ssrc] of seqs) q.push(parseRtp(rtp(seq, ssrc, seq & 0xff))!);
  q.flush();
  return { out, q };
}

t.test('header fields', async (t) => {
  const p = parseRtp(rtp(65535, 0xdeadbeef, 7))!;
  t.match(p, { seq: 65535, ssrc: 0xdeadbeef, payloadType: 33 });
  t.equal(p.payload.length, 188);
  t.equal(parseRtp(Buffer.alloc(8)), null, 'short datagram is not RTP');
});

t.test('swapped pairs are put back in order with reordering on', async (t) => {
  const seqs: [number, number][] = [];
  for (let s = 100; s < 120; s += 2) seqs.push([s + 1, 1], [s, 1]);
  seqs.unshift([99, 1]);
  const { out, q } = run(true, seqs);
  t.same(
    out,
    Array.from({ length: 21 }, (_, i) => 99 + i),
    'every packet, in order',
  );
  t.equal(q.lost, 0);
});

t.test('a real gap is counted', async (t) => {
  const { out, q } = run(false, [
    [10, 1],
    [11, 1],
    [16, 1],
  ]);
  t.same(out, [10, 11, 16]);
  t.equal(q.lost, 4);
});

for (const reorder of [false, true]) {
  t.test(`sender restart behind the old sequence (reorder ${reorder})`, async (t) => {
    const seqs: [number, number][] = [];
    for (let s = 20_000; s < 20_010; s++) seqs.push([s, 1]);
    for (let s = 3_000; s < 3_010; s++) seqs.push([s, 1]); // same SSRC, far behind
    const { out, q } = run(reorder, seqs);
    t.equal(out.length, 20, 'no packet of the new sequence dropped as late');
    t.equal(q.lost, 0, 'nothing counted lost');
    t.equal(q.restarts, 1);
  });
  t.test(`new SSRC ahead of the old sequence (reorder ${reorder})`, async (t) => {
    const seqs: [number, number][] = [];
    for (let s = 100; s < 110; s++) seqs.push([s, 1]);
    for (let s = 11_000; s < 11_010; s++) seqs.push([s, 2]);
    const { out, q } = run(reorder, seqs);
    t.equal(out.length, 20);
    t.equal(q.lost, 0, 'the jump is not 10 890 lost packets');
    t.equal(q.restarts, 1);
  });
}
