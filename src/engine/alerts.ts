// Alerts of a stream: a fault must persist `alert-delay` seconds before it is raised (flap
// damping); `enable-alert` false silences all of them. Raised alerts show in the status and log.
import type { Logger } from 'pino';
import type { Clock } from '../util/clock.ts';

export interface Alert {
  key: string;
  message: string;
  /** ISO time the fault was first seen. */
  since: string;
  raised: boolean;
}

interface Pending {
  message: string;
  firstMono: number;
  firstWall: number;
  raised: boolean;
}

export class AlertGate {
  private faults = new Map<string, Pending>();
  enabled = true;
  delayMs = 0;
  raisedTotal = 0;

  constructor(
    private readonly clock: Clock,
    private readonly log: Logger,
  ) {}

  /** Report whether the fault `key` is present now; call on every evaluation. */
  set(key: string, present: boolean, message = key): void {
    const f = this.faults.get(key);
    if (!present) {
      if (f?.raised) this.log.info({ alert: key }, 'alert cleared');
      this.faults.delete(key);
      return;
    }
    const now = this.clock.monotonic();
    const p = f ?? { message, firstMono: now, firstWall: this.clock.now(), raised: false };
    p.message = message;
    this.faults.set(key, p);
    if (!p.raised && this.enabled && now - p.firstMono >= this.delayMs) {
      p.raised = true;
      this.raisedTotal++;
      this.log.warn({ alert: key }, message);
    }
  }

  clear(): void {
    this.faults.clear();
  }

  list(): Alert[] {
    if (!this.enabled) return [];
    return [...this.faults.entries()].map(([key, p]) => ({
      key,
      message: p.message,
      since: new Date(p.firstWall).toISOString(),
      raised: p.raised,
    }));
  }
}
