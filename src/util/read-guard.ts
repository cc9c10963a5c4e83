// Bounds a run of reads in time: each wait for the next piece at most an idle limit, the whole run
// at most an overall limit, and a stop signal ends it. It trips once, with the first cause; a wait
// in progress then rejects at once (without waiting for the read to come back) and `onTrip`
// releases what the reads hold (a descriptor, a socket).
import type { Clock, Timer } from './clock.ts';

export class ReadGuard {
  private failed: Error | undefined;
  private reject: ((err: Error) => void) | undefined;
  private idle: Timer | undefined;
  private overall: Timer | undefined;
  private unwatch: (() => void) | undefined;

  /** `idleMs` undefined: no limit per wait, only the overall one (if set). */
  constructor(
    private readonly clock: Clock,
    private readonly idleMs: number | undefined,
    private readonly idleError: () => Error,
    private readonly onTrip: (err: Error) => void,
  ) {}

  /** The cause it tripped with, if it did. */
  get tripped(): Error | undefined {
    return this.failed;
  }

  /** Trip with this error after `ms` unless stopped. The timer is the clock's own: held until it
   *  fires or is cancelled, so no collection can lose it. */
  limit(ms: number, err: () => Error): void {
    this.overall = this.clock.setTimeout(() => this.trip(err()), ms);
  }

  /** Trip when `signal` aborts (at once when it already has). */
  watch(signal: AbortSignal, err: () => Error): void {
    if (signal.aborted) {
      this.trip(err());
      return;
    }
    const onAbort = () => this.trip(err());
    signal.addEventListener('abort', onAbort, { once: true });
    this.unwatch = () => signal.removeEventListener('abort', onAbort);
  }

  trip(err: Error): void {
    if (this.failed) return;
    this.failed = err;
    this.stop();
    this.reject?.(err);
    this.onTrip(err);
  }

  /** Wait for `p`, at most the idle limit. */
  async next<T>(p: Promise<T>): Promise<T> {
    if (this.failed) {
      p.catch(() => undefined);
      throw this.failed;
    }
    if (this.idleMs !== undefined)
      this.idle = this.clock.setTimeout(() => this.trip(this.idleError()), this.idleMs);
    try {
      return await new Promise<T>((ok, fail) => {
        this.reject = fail;
        p.then(ok, fail);
      });
    } finally {
      this.reject = undefined;
      this.idle?.cancel();
      this.idle = undefined;
    }
  }

  /** Cancel the timers and forget the signal; a later explicit trip() still trips. */
  stop(): void {
    this.idle?.cancel();
    this.overall?.cancel();
    this.unwatch?.();
    this.unwatch = undefined;
  }
}
