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

/** A manual clock that counts the timers set on it. */
function countingClock() {
  const clock = new ManualClock();
  const n = { set: 0 };
  const counting = {
    now: () => clock.now(),
    monotonic: () => clock.monotonic(),
    setTimeout: (fn: () => void, ms: number) => {
      n.set++;
      return clock.setTimeout(fn, ms);
    },
    setInterval: (fn: () => void, ms: number) => clock.setInterval(fn, ms),
  };
  return { clock, counting, timers: () => n.set };
}

t.test('pacers of one clock share their wake-ups (one timer per tick)', async (t) => {
  const { clock, counting, timers } = countingClock();
  const outs: number[][] = [[], [], [], []];
  const pacers = outs.map((o) => new PcrPacer(counting, (b) => o.push(b.length / 188)));
  // Each: PCR 0, then a PCR 495–510 ms later (due less the lead: 475–490 ms).
  const done = pacers.map((p, i) =>
    p.play(Buffer.concat([at(0), plain(), at(495 + 5 * i), plain()])),
  );
  await turns();
  t.same(outs, [[2], [2], [2], [2]], 'up to the second PCR at once');
  clock.advance(474);
  await turns();
  t.same(outs, [[2], [2], [2], [2]], 'none before its time less the lead');
  t.equal(timers(), 1, 'one timer for four sleeping pacers (the tick at 480 ms)');
  clock.advance(6); // 480 ms
  await turns();
  t.same(outs, [[2, 2], [2, 2], [2], [2]], 'the two due by 480 ms, at one wake-up');
  clock.advance(20); // 500 ms
  await Promise.all(done);
  t.same(
    outs,
    [
      [2, 2],
      [2, 2],
      [2, 2],
      [2, 2],
    ],
    'the rest at the next tick, none after its PCR',
  );
  for (const p of pacers) p.close();
});

t.test('a closed pacer wakes at once and is not called back', async (t) => {
  const clock = new ManualClock();
  const out: number[] = [];
  const pacer = new PcrPacer(clock, (b) => out.push(b.length / 188));
  const done = pacer.play(Buffer.concat([at(0), plain(), at(1000), plain()]));
  await turns();
  pacer.close();
  await done;
  clock.advance(2000);
  await turns();
  t.same(out, [2], 'nothing after close');
});

t.test(
  'consumers that take bursts: a 100 ms grid, a step early; back to 20 ms when asked',
  async (t) => {
    const { clock, counting, timers } = countingClock();
    let smooth = false;
    const out: number[] = [];
    const pacer = new PcrPacer(
      counting,
      (b) => out.push(b.length / 188),
      () => smooth,
    );
    // A PCR every 20 ms for 1 s, each followed by one plain packet.
    const pcrs = Array.from({ length: 51 }, (_, i) => Buffer.concat([at(i * 20), plain()]));
    const done = pacer.play(Buffer.concat(pcrs));
    await turns();
    t.same(out, [12], 'up to 100 ms ahead at once: PCRs 0–100 ms with their packets');
    t.equal(timers(), 1);
    clock.advance(99);
    await turns();
    t.same(out, [12], 'nothing between grid points');
    clock.advance(1); // 100 ms: PCRs 120–200
    await turns();
    t.same(out, [12, 10], 'a step of the grid at each wake-up');
    clock.advance(100); // 200 ms: PCRs 220–300
    await turns();
    t.same(out, [12, 10, 10]);
    t.equal(timers(), 3, 'one wake-up per 100 ms');
    // A consumer that wants packets evenly spread arrives (a UDP output): from the next wake-up
    // on, the 20 ms grid with a 20 ms lead.
    smooth = true;
    clock.advance(100); // 300 ms: PCR 320
    await turns();
    t.same(out, [12, 10, 10, 2]);
    clock.advance(20); // 320 ms: PCR 340
    await turns();
    t.same(out, [12, 10, 10, 2, 2], 'one PCR per 20 ms tick');
    for (let i = 0; i < 35; i++) {
      clock.advance(20);
      await turns();
    }
    await done;
    t.equal(
      out.reduce((a, b) => a + b),
      102,
      'every packet, none twice',
    );
    pacer.close();
  },
);
