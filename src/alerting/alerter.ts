// The Alerter: every second it observes the faults (./observe.ts), tracks each alert
// (./tracker.ts) and hands the events to the sinks: the log always; the history, the feed and
// the webhook for alerts at or above min-severity (docs/alerting.md).
import type { Logger } from 'pino';
import type { Clock, Timer } from '../util/clock.ts';
import { AlertFeed } from './feed.ts';
import { AlertHistory } from './history.ts';
import { FaultObserver } from './observe.ts';
import type { AlertSources } from './sources.ts';
import { AlertTracker, type TrackerEvent } from './tracker.ts';
import {
  type ActiveAlert,
  type AlertEvent,
  type AlerterSettings,
  atLeast,
  type RuleId,
  type Severity,
} from './types.ts';
import { type Poster, WebhookSink, type WebhookStats } from './webhook.ts';

/** How often the faults are observed: the resolution of alert-delay, delay-sec and clear-sec. */
export const SWEEP_MS = 1000;

export interface AlerterDeps {
  clock: Clock;
  log: Logger;
  sources: AlertSources;
  post: Poster;
  /** The name in every event (the host name). */
  server: string;
}

export interface AlerterCounts {
  raised: number;
  cleared: number;
  repeated: number;
  /** Events below min-severity: logged only. */
  logOnly: number;
  /** Raises per rule and severity, for /metrics. */
  raisedBy: Map<string, { rule: RuleId; severity: Severity; n: number }>;
}

const LOG_LEVEL: Readonly<Record<Severity, 'info' | 'warn' | 'error'>> = {
  info: 'info',
  warning: 'warn',
  critical: 'error',
};

export class Alerter {
  readonly feed = new AlertFeed();
  private readonly history: AlertHistory;
  private readonly tracker: AlertTracker;
  private readonly observer: FaultObserver;
  private readonly webhook: WebhookSink;
  private timer: Timer | null = null;
  private seq = 0;
  readonly counts: AlerterCounts = {
    raised: 0,
    cleared: 0,
    repeated: 0,
    logOnly: 0,
    raisedBy: new Map(),
  };

  constructor(
    private settings: AlerterSettings,
    private readonly deps: AlerterDeps,
  ) {
    this.history = new AlertHistory(settings.historySize);
    this.tracker = new AlertTracker(deps.clock, tracking(settings));
    this.observer = new FaultObserver(deps.clock, deps.log, deps.sources);
    this.webhook = new WebhookSink(webhookSettings(settings), {
      clock: deps.clock,
      log: deps.log,
      post: deps.post,
    });
    this.arm();
  }

  get enabled(): boolean {
    return this.settings.enable;
  }

  update(next: AlerterSettings): void {
    const wasOn = this.settings.enable;
    this.settings = next;
    this.tracker.settings = tracking(next);
    this.history.resize(next.historySize);
    if (wasOn && !next.enable) this.stop('alerter disabled');
    this.webhook.update(webhookSettings(next));
    this.arm();
  }

  /** Stops without clear events (a shutdown does not mend the faults) and drops what the
   *  webhook still had queued. */
  close(): void {
    this.timer?.cancel();
    this.timer = null;
    this.observer.withdraw();
    this.webhook.close();
  }

  /** One observation; the timer calls it every SWEEP_MS (tests call it directly). */
  sweep(): void {
    if (!this.settings.enable) return;
    const faults = this.observer.observe(this.settings);
    for (const e of this.tracker.update(faults)) this.dispatch(e);
  }

  /** Active alerts at or above min-severity, newest raise first. */
  active(): ActiveAlert[] {
    return this.tracker
      .active()
      .filter((a) => atLeast(a.severity, this.settings.minSeverity))
      .sort((a, b) => b.raisedAt.localeCompare(a.raisedAt));
  }

  recent(limit?: number): AlertEvent[] {
    return this.history.recent(limit);
  }

  get webhookStats(): Readonly<WebhookStats> {
    return this.webhook.stats;
  }

  private arm(): void {
    if (this.settings.enable && !this.timer) {
      this.timer = this.deps.clock.setInterval(() => this.sweep(), SWEEP_MS);
    } else if (!this.settings.enable && this.timer) {
      this.timer.cancel();
      this.timer = null;
    }
  }

  private stop(reason: string): void {
    this.timer?.cancel();
    this.timer = null;
    for (const e of this.tracker.clearAll(reason)) this.dispatch(e);
    this.observer.withdraw();
  }

  private dispatch(e: TrackerEvent): void {
    const ev: AlertEvent = {
      event: e.event,
      seq: ++this.seq,
      at: new Date(this.deps.clock.now()).toISOString(),
      server: this.deps.server,
      ...e.alert,
      ...(e.reason ? { reason: e.reason } : {}),
    };
    this.count(ev);
    const level = e.event === 'clear' ? 'info' : LOG_LEVEL[ev.severity];
    this.deps.log[level](
      { alert: ev.id, rule: ev.rule, severity: ev.severity, subject: `${ev.kind}:${ev.subject}` },
      `alert ${ev.event}: ${ev.message}${ev.reason ? ` (${ev.reason})` : ''}`,
    );
    if (!atLeast(ev.severity, this.settings.minSeverity)) {
      this.counts.logOnly++;
      return;
    }
    this.history.add(ev);
    this.feed.publish(ev);
    this.webhook.push(ev);
  }

  private count(ev: AlertEvent): void {
    if (ev.event === 'clear') this.counts.cleared++;
    else if (ev.event === 'repeat') this.counts.repeated++;
    else {
      this.counts.raised++;
      const k = `${ev.rule}/${ev.severity}`;
      const c = this.counts.raisedBy.get(k) ?? { rule: ev.rule, severity: ev.severity, n: 0 };
      c.n++;
      this.counts.raisedBy.set(k, c);
    }
  }
}

function tracking(s: AlerterSettings) {
  return { repeatMs: s.repeatMs, clearMs: s.clearMs };
}

function webhookSettings(s: AlerterSettings) {
  return {
    url: s.webhookUrl,
    timeoutMs: s.webhookTimeoutMs,
    retries: s.webhookRetries,
    queueSize: s.webhookQueueSize,
  };
}
