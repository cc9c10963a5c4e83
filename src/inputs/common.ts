// Helpers shared by input and output transports: interface name resolution for `bind-if`,
// and an exponential reconnect backoff driven by the Clock.
import { networkInterfaces } from 'node:os';
import type { Clock, Timer } from '../util/clock.ts';

// Spec readers live in src/config/spec-values.ts; re-exported for src/drivers/stream/instance.ts
// until its import moves there (that file is being edited in parallel).
export { bool, num, str } from '../config/spec-values.ts';

/** `bind-if` is an interface name or a local IPv4 address; returns the address ('' = any). */
export function resolveInterface(bindIf: string): string {
  if (!bindIf) return '';
  if (/^\d+\.\d+\.\d+\.\d+$/.test(bindIf)) return bindIf;
  const addrs = networkInterfaces()[bindIf] ?? [];
  const v4 = addrs.find((a) => a.family === 'IPv4');
  if (!v4) throw new Error(`bind-if ${bindIf}: no such interface with an IPv4 address`);
  return v4.address;
}

export function isMulticast(addr: string): boolean {
  const first = Number(addr.split('.')[0]);
  return first >= 224 && first <= 239;
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
