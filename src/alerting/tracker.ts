// The state of each alert: raised when its fault is raised (the flap damping happened before,
// in an AlertGate), repeated every repeat-sec while active, cleared once the fault stayed gone
// for clear-sec (hysteresis). Pure: the sweep hands it the faults, it answers with events.
import { randomBytes } from 'node:crypto';
import type { Clock } from '../util/clock.ts';
import { maskCredentials } from '../util/credentials.ts';
import { RULES } from './rules.ts';
import type { ActiveAlert, AlertEventType, Fault } from './types.ts';

export interface TrackerEvent {
  event: AlertEventType;
  alert: ActiveAlert;
  reason?: string;
}

interface Entry {
  alert: ActiveAlert;
  lastNotified: number;
  /** Monotonic ms the fault went away, -1 while present. */
  goneSince: number;
}

export interface TrackerSettings {
  repeatMs: number;
  clearMs: number;
}

export class AlertTracker {
  private readonly entries = new Map<string, Entry>();
  /** Prefix of this process's alert ids, so ids from before a restart never repeat. */
  private readonly boot = randomBytes(3).toString('hex');
  private seq = 0;

  constructor(
    private readonly clock: Clock,
    public settings: TrackerSettings,
  ) {}

  /** One sweep: every fault present now (raised or not). */
  update(faults: readonly Fault[]): TrackerEvent[] {
    const now = this.clock.monotonic();
    const out: TrackerEvent[] = [];
    const present = new Set<string>();
    for (const f of faults) {
      present.add(f.key);
      const e = this.entries.get(f.key);
      if (e) {
        e.goneSince = -1;
        e.alert.message = maskCredentials(f.message);
        const { repeatMs } = this.settings;
        if (repeatMs > 0 && now - e.lastNotified >= repeatMs) {
          e.lastNotified = now;
          out.push({ event: 'repeat', alert: { ...e.alert } });
        }
      } else if (f.raised) {
        const alert: ActiveAlert = {
          id: `${this.boot}-${++this.seq}`,
          rule: f.rule,
          severity: RULES[f.rule].severity,
          kind: f.kind,
          subject: f.subject,
          key: f.key,
          // Every sink (log, history, feeds, webhook) gets it so: an input's URL may be in it.
          message: maskCredentials(f.message),
          since: new Date(f.since).toISOString(),
          raisedAt: new Date(this.clock.now()).toISOString(),
        };
        this.entries.set(f.key, { alert, lastNotified: now, goneSince: -1 });
        out.push({ event: 'raise', alert: { ...alert } });
      }
    }
    for (const [key, e] of this.entries) {
      if (present.has(key)) continue;
      if (e.goneSince < 0) e.goneSince = now;
      if (now - e.goneSince >= this.settings.clearMs) {
        this.entries.delete(key);
        out.push({ event: 'clear', alert: e.alert, reason: 'fault gone' });
      }
    }
    return out;
  }

  /** Clear every active alert at once (the alerter is switched off or closed). */
  clearAll(reason: string): TrackerEvent[] {
    const out = [...this.entries.values()].map((e) => ({
      event: 'clear' as const,
      alert: e.alert,
      reason,
    }));
    this.entries.clear();
    return out;
  }

  active(): ActiveAlert[] {
    return [...this.entries.values()].map((e) => ({ ...e.alert }));
  }

  get size(): number {
    return this.entries.size;
  }
}
