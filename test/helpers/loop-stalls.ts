// The event loop's stalls as a test sees them: its own timer, due every PROBE_MS, and how late
// it runs — the scheduling delay a loaded machine (and forced collections) puts on every timer
// and socket event of the process, the code's under test and the test's own alike.
import type { Teardown } from './server.ts';

/** How often the probe is due. */
export const PROBE_MS = 5;
/** Lateness a timer has on an idle loop (its clock counts whole ms): not a stall. */
const TIMER_SLACK_MS = 1;
/** What the probe may miss of the stalls met by one loop turn of the code under test. */
export const UNSEEN_PER_TURN_MS = PROBE_MS + TIMER_SLACK_MS;

export interface LoopStalls {
  /** How long, between `from` and `to` (performance.now()), the loop held the probe past its
   *  time; a stall shorter than a probe period may go unseen. */
  between(from: number, to: number): number;
  /** Whether the loop went through its I/O phase at least once after `from` and before `to`
   *  (a probe run after `from` whose setImmediate ran before `to`). */
  polledBetween(from: number, to: number): boolean;
  /** The probe's next run and I/O phase (a stall that ended before now is recorded by then). */
  next(): Promise<void>;
}

/** Probe this process's loop until the test ends. */
export function probeLoopStalls(t: Teardown): LoopStalls {
  const spans: [number, number][] = [];
  /** Each probe run, and when the check phase after its I/O phase ran. */
  const turns: [number, number][] = [];
  const waiting: (() => void)[] = [];
  let due = performance.now() + PROBE_MS;
  let timer: NodeJS.Timeout;
  const run = () => {
    const ran = performance.now();
    if (ran > due + TIMER_SLACK_MS) spans.push([due + TIMER_SLACK_MS, ran]);
    due = ran + PROBE_MS;
    setImmediate(() => {
      turns.push([ran, performance.now()]);
      for (const w of waiting.splice(0)) w();
    });
    timer = setTimeout(run, PROBE_MS);
  };
  timer = setTimeout(run, PROBE_MS);
  t.teardown(() => clearTimeout(timer));
  return {
    between: (from, to) =>
      spans.reduce((s, [a, b]) => s + Math.max(0, Math.min(b, to) - Math.max(a, from)), 0),
    polledBetween: (from, to) => turns.some(([ran, checked]) => ran > from && checked < to),
    next: () => new Promise((r) => waiting.push(r)),
  };
}
