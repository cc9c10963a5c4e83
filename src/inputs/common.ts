// Helpers shared by input transports: an exponential reconnect backoff driven by the Clock.
import type { Clock, Timer } from '../util/clock.ts';

/** Reconnect delays: 0.5 s doubling up to 10 s, reset after a run that lasted long enough. */
export const BACKOFF_MIN_MS = 500;
export const BACKOFF_MAX_MS = 10_000;

export class Backoff {
  private delay = BACKOFF_MIN_MS;
  private timer: Timer | null = null;
  attempts = 0;

  constructor(private readonly clock: Clock) {}

  schedule(fn: () => void): number {
    this.cancel();
    const d = this.delay;
    this.delay = Math.min(this.delay * 2, BACKOFF_MAX_MS);
    this.attempts++;
    this.timer = this.clock.setTimeout(() => {
      this.timer = null;
      fn();
    }, d);
    return d;
  }

  reset(): void {
    this.delay = BACKOFF_MIN_MS;
  }

  cancel(): void {
    this.timer?.cancel();
    this.timer = null;
  }
}
