// Helpers shared by input transports: an exponential reconnect backoff driven by the Clock, and
// a failed connection to an origin in words that name it.
import type { Clock, Timer } from '../util/clock.ts';
import { maskCredentials } from '../util/credentials.ts';

/** A connection to `url` that could not be made, naming the URL (credentials masked) and what
 *  to check; undefined for an error that is not about reaching it. */
export function unreachable(err: Error & { code?: string }, url: string): string | undefined {
  const at = maskCredentials(url);
  switch (err.code) {
    case 'ECONNREFUSED':
      return `${at} refused the connection: is the origin running, and are its host and port right?`;
    case 'ENOTFOUND':
    case 'EAI_AGAIN':
      return `host of ${at} not found: check the host name`;
    case 'EHOSTUNREACH':
    case 'ENETUNREACH':
      return `${at} is unreachable: check the address and the route to it`;
  }
  return undefined;
}

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
