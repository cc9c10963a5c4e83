// A request's hard deadline: one timer set on the clock (held strongly until it fires or is
// cancelled, unlike an AbortSignal's timer, which Node 20 can lose to the collector) that ends
// whatever exchange of the request is under way when it passes — however slowly the origin
// trickles its bytes, which an idle time-out never catches.
import type { Clock, Timer } from '../../util/clock.ts';

export class Deadline {
  private timer: Timer | null;
  private end: (() => void) | null = null;
  passed = false;

  constructor(
    clock: Clock,
    readonly ms: number,
  ) {
    this.timer = clock.setTimeout(() => {
      this.timer = null;
      this.passed = true;
      const end = this.end;
      this.end = null;
      end?.();
    }, ms);
  }

  /** What the deadline means for an exchange: nothing came, or the answer did not finish. */
  words(answered: boolean): string {
    const s = this.ms / 1000;
    return answered
      ? `origin did not finish its answer in ${s} s`
      : `no answer from origin in ${s} s`;
  }

  /** The exchange under way: `end` destroys it when the deadline passes (at once if it has). */
  watch(end: () => void): void {
    if (this.passed) end();
    else if (this.timer) this.end = end;
  }

  /** The exchange settled. */
  unwatch(): void {
    this.end = null;
  }

  /** The request is done, or what is left of it is not bound by the deadline. */
  cancel(): void {
    this.timer?.cancel();
    this.timer = null;
    this.end = null;
  }
}
