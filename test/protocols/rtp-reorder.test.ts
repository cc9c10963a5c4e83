// RtpSequencer with reordering (as the rtsp input uses it): packets swapped by the network come out in order, a lost one is given up after
// `depth` later packets, duplicates dropped, a new SSRC restarts the sequence.
import t from 'tap';
import { type RtpPacket, RtpSequencer } from '../../src/protocols/rtp/packet.ts';

const p = (seq: number, ssrc = 1): RtpPacket => ({
  seq,
  ssrc,
  timestamp: 0,
  payloadType: 96,
  payload: Buffer.alloc(0),
});

t.test('reordered packets come out in order', async (t) => {
  const out: number[] = [];
  const r = new RtpSequencer(true, (x) => out.push(x.seq), 4);
  for (const s of [65534, 0, 65535, 1, 3, 2, 2]) r.push(p(s));
  t.same(out, [65534, 65535, 0, 1, 2, 3]);
  t.equal(r.reordered, 2);
  t.equal(r.duplicates, 1);
});

t.test('a lost packet is given up after depth later ones', async (t) => {
  const out: number[] = [];
  const r = new RtpSequencer(true, (x) => out.push(x.seq), 2);
  for (const s of [10, 12, 13]) r.push(p(s));
  t.same(out, [10], 'waiting for 11');
  r.push(p(14));
  t.same(out, [10, 12, 13, 14]);
  r.push(p(11));
  t.same(out, [10, 12, 13, 14], 'too late: dropped');
  r.push(p(20, 2));
  r.flush();
  t.same(out, [10, 12, 13, 14, 20], 'a new source restarts');
});
