// A ManualClock that tells the test when the code under test sets a timeout, so a test waits
// for that code to go to sleep (a held request, a paced read, a restart backoff) and then moves
// time by hand, instead of sleeping for real and hoping the code got there.
import { ManualClock, type Timer } from '../../src/util/clock.ts';

export class WatchedClock extends ManualClock {
  private due = new Set<{ at: number }>();
  private waiters: Array<() => void> = [];

  override setTimeout(fn: () => void, ms: number): Timer {
    const entry = { at: this.monotonic() + Math.max(0, ms) };
    this.due.add(entry);
    const timer = super.setTimeout(() => {
      this.due.delete(entry);
      fn();
    }, ms);
    for (const wake of this.waiters.splice(0)) wake();
    return {
      cancel: () => {
        this.due.delete(entry);
        timer.cancel();
      },
    };
  }

  /** Timeouts set and neither fired nor cancelled. */
  get pending(): number {
    return this.due.size;
  }

  /** Milliseconds until the earliest pending timeout falls due (Infinity when none). */
  untilNext(): number {
    let at = Number.POSITIVE_INFINITY;
    for (const e of this.due) at = Math.min(at, e.at);
    return at - this.monotonic();
  }

  /** Resolves when the next timeout is set; rejects after `timeoutMs` of real time. Call it
   *  before the action that leads to the timeout. */
  armed(what: string, timeoutMs = 5_000): Promise<void> {
    return new Promise((resolve, reject) => {
      const bound = setTimeout(
        () => reject(new Error(`timed out after ${timeoutMs} ms waiting for ${what}`)),
        timeoutMs,
      );
      this.waiters.push(() => {
        clearTimeout(bound);
        resolve();
      });
    });
  }
}
