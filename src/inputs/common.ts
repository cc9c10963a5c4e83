// Helpers shared by input and output transports: typed field reads with defaults, interface
// name resolution for `bind-if`, and an exponential reconnect backoff driven by the Clock.
import type { Clock, Timer } from '../util/clock.ts';
import { interfaceAddress } from '../util/net.ts';

export function num(cfg: Record<string, unknown>, key: string, dflt: number): number {
  const v = cfg[key];
  return typeof v === 'number' && Number.isFinite(v) ? v : dflt;
}

export function str(cfg: Record<string, unknown>, key: string, dflt = ''): string {
  const v = cfg[key];
  return typeof v === 'string' ? v : dflt;
}

export function bool(cfg: Record<string, unknown>, key: string, dflt: boolean): boolean {
  const v = cfg[key];
  return typeof v === 'boolean' ? v : dflt;
}

export function strList(cfg: Record<string, unknown>, key: string): string[] {
  const v = cfg[key];
  return Array.isArray(v) ? v.filter((x): x is string => typeof x === 'string') : [];
}

/** `bind-if` is an interface name or a local IPv4 address; returns the address ('' = any). */
export function resolveInterface(bindIf: string): string {
  if (!bindIf) return '';
  const address = interfaceAddress(bindIf);
  if (address === undefined) {
    throw new Error(`bind-if ${bindIf}: no such interface with an IPv4 address`);
  }
  return address;
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
