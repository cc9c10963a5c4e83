// PcrPacer (the file and hls inputs' real-time delivery) on a hand-moved clock: packets go out
// no earlier than their PCR says, a PCR jump re-anchors instead of sleeping for it, bytes since
// the last PCR are counted for sources without one.
import t from 'tap';
import { PCR_PER_MS } from '../../src/mpegts/pcr.ts';
import { PcrPacer } from '../../src/mpegts/pcr-pacer.ts';
import { ManualClock } from '../../src/util/clock.ts';
import { packet } from '../helpers/ts-craft.ts';

const at = (ms: number) => packet({ pid: 0x100, pcr: ms * PCR_PER_MS, payload: Buffer.alloc(10) });
const plain = () => packet({ pid: 0x101, payload: Buffer.alloc(184) });
const turns = async () => {
  for (let i = 0; i < 5; i++) await new Promise((r) => setImmediate(r));
};

t.test('packets wait for their PCR; a jump re-anchors; bytes since PCR counted', async (t) => {
  const clock = new ManualClock();
  const out: number[] = [];
  const pacer = new PcrPacer(clock, (b) => out.push(b.length / 188));
  // PCR 0, a plain packet, PCR 500 ms, a plain packet.
  const done = pacer.play(Buffer.concat([at(0), plain(), at(500), plain()]));
  await turns();
  t.same(out, [2], 'up to the second PCR at once');
  clock.advance(400);
  await turns();
  t.same(out, [2], 'still early (its time less the lead)');
  clock.advance(100);
  await done;
  t.same(out, [2, 2], 'the rest at its PCR time');
  t.equal(pacer.bytesSincePcr, 2 * 188, 'the PCR packet and the one after it');

  // A PCR 10 s later: a discontinuity, not a 10 s sleep.
  await pacer.play(Buffer.concat([at(10_500), plain()]));
  t.same(out, [2, 2, 2], 'no wait across the jump');

  // No PCR at all: the count grows.
  await pacer.play(Buffer.concat([plain(), plain(), plain()]));
  t.equal(pacer.bytesSincePcr, 5 * 188);
  pacer.close();
});
