// The event loops' delay as a Prometheus histogram that only grows: a timer on each loop, its
// lateness observed once per run, so a stall of 2 s is one observation of 2 s (docs/api.md).
import { Gauge, Histogram, type Registry } from 'prom-client';

export const LOOP_DELAY = 'sluice_eventloop_delay_seconds';
export const LOOP_DELAY_MAX = 'sluice_eventloop_delay_max_seconds';
/** How often the sampling timer is due (ms): finer costs wake-ups, coarser misses short stalls. */
export const LOOP_SAMPLE_MS = 10;
/** From well under the 10 ms goal to stalls of seconds. */
export const LOOP_DELAY_BUCKETS = [
  0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10,
];

/** Records one lateness (seconds) of the loop it was made for. */
export type LoopObserver = (seconds: number) => void;

/** The loop-delay histogram and max gauge of `registry`, made on first use. */
function loopMetrics(registry: Registry): { h: Histogram<'loop'>; max: Gauge<'loop'> } {
  const h =
    (registry.getSingleMetric(LOOP_DELAY) as Histogram<'loop'> | undefined) ??
    new Histogram({
      name: LOOP_DELAY,
      help: 'How late each run of a loop timer due every 10 ms came, by event loop (a stall is one observation of its length)',
      labelNames: ['loop'],
      buckets: LOOP_DELAY_BUCKETS,
      registers: [registry],
    });
  const max =
    (registry.getSingleMetric(LOOP_DELAY_MAX) as Gauge<'loop'> | undefined) ??
    new Gauge({
      name: LOOP_DELAY_MAX,
      help: 'Longest loop delay seen since the server started, by event loop',
      labelNames: ['loop'],
      registers: [registry],
    });
  return { h, max };
}

/** The observer of loop `loop` in `registry`: each call is one sample of its lateness. A new
 *  loop (a worker's) is this one call; its samples may come from wherever it runs. */
export function loopDelayObserver(registry: Registry, loop: string): LoopObserver {
  const { h, max } = loopMetrics(registry);
  const labels = { loop };
  h.zero(labels);
  max.set(labels, 0);
  let worst = 0;
  return (seconds) => {
    h.observe(labels, seconds);
    if (seconds > worst) {
      worst = seconds;
      max.set(labels, seconds);
    }
  };
}

/** What the sampler needs of time: a monotonic reading (ms) and a one-shot timer. */
export interface LoopTimer {
  monotonic(): number;
  setTimeout(fn: () => void, ms: number): { cancel(): void };
}

/** Real time; the timer does not keep the process alive. */
const realTimer: LoopTimer = {
  monotonic: () => performance.now(),
  setTimeout(fn, ms) {
    const t = setTimeout(fn, ms);
    t.unref();
    return { cancel: () => clearTimeout(t) };
  },
};

/**
 * Sample the loop this runs on: a timer due every `everyMs`, each run observing how late it
 * came. The next one is due `everyMs` after this run (not after the missed due time), so a
 * stall is one late run, never a burst of catch-up runs. Returns the stop function.
 */
export function sampleLoop(
  observe: LoopObserver,
  timer: LoopTimer = realTimer,
  everyMs = LOOP_SAMPLE_MS,
): () => void {
  let due = timer.monotonic() + everyMs;
  let current = timer.setTimeout(run, everyMs);
  function run(): void {
    const now = timer.monotonic();
    observe(Math.max(0, now - due) / 1000);
    due = now + everyMs;
    current = timer.setTimeout(run, everyMs);
  }
  return () => current.cancel();
}

const sampled = new WeakSet<Registry>();

/** The main thread's loop (`loop="main"`), sampled once per registry for the process's life. */
export function installMainLoopDelay(registry: Registry): void {
  if (sampled.has(registry)) return;
  sampled.add(registry);
  sampleLoop(loopDelayObserver(registry, 'main'));
}
