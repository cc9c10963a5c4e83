// The loop-delay histogram (src/api/loop-delay.ts) on an injected timer: a stall lands in the
// bucket of its length and in `_sum`, scrapes never reset it, a second loop is one call.
import { Registry } from 'prom-client';
import t from 'tap';
import {
  LOOP_DELAY,
  LOOP_DELAY_MAX,
  loopDelayObserver,
  sampleLoop,
} from '../../src/api/loop-delay.ts';

/** A timer whose time moves only when the test says: `run(late)` fires the pending timeout
 *  `late` ms after it was due, as a loop held that long would. */
class StallTimer {
  mono = 0;
  private pending?: { at: number; fn: () => void };
  monotonic(): number {
    return this.mono;
  }
  setTimeout(fn: () => void, ms: number) {
    const entry = { at: this.mono + ms, fn };
    this.pending = entry;
    return {
      cancel: () => {
        if (this.pending === entry) this.pending = undefined;
      },
    };
  }
  run(lateMs = 0): void {
    const p = this.pending;
    if (!p) throw new Error('no timer pending');
    this.pending = undefined;
    this.mono = p.at + lateMs;
    p.fn();
  }
  get armed(): boolean {
    return this.pending !== undefined;
  }
}

/** `sample{labels} value` lines of the registry's text, by series. */
async function series(reg: Registry): Promise<Map<string, number>> {
  const out = new Map<string, number>();
  for (const line of (await reg.metrics()).split('\n')) {
    const m = /^(sluice_eventloop_\w+(?:\{[^}]*\})?) (\S+)$/.exec(line);
    if (m) out.set(m[1]!, Number(m[2]));
  }
  return out;
}

t.test('a 2 s stall is one observation of 2 s: its bucket, _sum and the max', async (t) => {
  const reg = new Registry();
  const timer = new StallTimer();
  const stop = sampleLoop(loopDelayObserver(reg, 'main'), timer, 10);
  for (let i = 0; i < 98; i++) timer.run(0);
  timer.run(2000);
  timer.run(0);
  const s = await series(reg);
  t.equal(s.get(`${LOOP_DELAY}_count{loop="main"}`), 100, 'one sample per timer run');
  t.ok(s.get(`${LOOP_DELAY}_sum{loop="main"}`)! >= 2, 'the stall is all of _sum');
  t.equal(s.get(`${LOOP_DELAY}_bucket{le="1",loop="main"}`), 99, 'not at or under 1 s');
  t.equal(s.get(`${LOOP_DELAY}_bucket{le="2.5",loop="main"}`), 100, 'at or under 2.5 s');
  t.equal(s.get(`${LOOP_DELAY}_bucket{le="0.001",loop="main"}`), 99, 'idle runs are on time');
  t.equal(s.get(`${LOOP_DELAY_MAX}{loop="main"}`), 2, 'max since start');
  stop();
  t.notOk(timer.armed, 'stop cancels the pending timer');
});

t.test('after a stall the next run is due one interval later: no catch-up burst', async (t) => {
  const reg = new Registry();
  const timer = new StallTimer();
  sampleLoop(loopDelayObserver(reg, 'main'), timer, 10);
  timer.run(300);
  timer.run(0);
  timer.run(0);
  const s = await series(reg);
  t.equal(s.get(`${LOOP_DELAY}_count{loop="main"}`), 3);
  t.equal(s.get(`${LOOP_DELAY}_bucket{le="0.25",loop="main"}`), 2, 'one stall, counted once');
  t.equal(s.get(`${LOOP_DELAY}_bucket{le="0.5",loop="main"}`), 3, 'of 300 ms');
});

t.test('scrapes never reset it: every series of a second scrape is ≥ the first', async (t) => {
  const reg = new Registry();
  const timer = new StallTimer();
  sampleLoop(loopDelayObserver(reg, 'main'), timer, 10);
  timer.run(40);
  const first = await series(reg);
  const again = await series(reg); // a second scraper right after the first
  t.same(again, first, 'a scrape changes nothing');
  timer.run(5);
  const later = await series(reg);
  for (const [k, v] of first) t.ok(later.get(k)! >= v, `${k}: ${v} → ${later.get(k)}`);
  t.equal(later.get(`${LOOP_DELAY}_bucket{le="0.05",loop="main"}`), 2, 'both samples kept');
});

t.test('another loop is one call: its own series beside main', async (t) => {
  const reg = new Registry();
  const main = loopDelayObserver(reg, 'main');
  const worker = loopDelayObserver(reg, 'worker-1');
  main(0.002);
  worker(0.7);
  const s = await series(reg);
  t.equal(s.get(`${LOOP_DELAY}_count{loop="main"}`), 1);
  t.equal(s.get(`${LOOP_DELAY}_count{loop="worker-1"}`), 1);
  t.equal(s.get(`${LOOP_DELAY_MAX}{loop="worker-1"}`), 0.7);
  t.equal(s.get(`${LOOP_DELAY_MAX}{loop="main"}`), 0.002);
  const text = await reg.metrics();
  t.match(text, new RegExp(`^# TYPE ${LOOP_DELAY} histogram$`, 'm'));
});
