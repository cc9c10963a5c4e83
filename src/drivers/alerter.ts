// Driver of the `alerter` settings object (docs/alerting.md): one Alerter (src/alerting/) over
// the running streams, storages and EPG sources, shared as the `alerter` service for the
// /data/alerts routes; its counters in /metrics.
import os from 'node:os';
import { Counter, Gauge, type Registry } from 'prom-client';
import { Alerter } from '../alerting/alerter.ts';
import { httpPost } from '../alerting/http-post.ts';
import type { AlertSources } from '../alerting/sources.ts';
import type { AlerterSettings } from '../alerting/types.ts';
import type { Resource } from '../config/types.ts';
import { usedPercent } from '../dvr/disk.ts';
import { dvrStorages } from '../dvr/registry.ts';
import { EPG_SERVICE } from '../epg/runtime.ts';
import { PRIORITY_1 } from '../native/ts.ts';
import type { Host, Instance, KindDriver, ResourceStatus, SpecOf } from '../reconciler/driver.ts';
import { ServiceKey, type Services } from '../util/services.ts';
import { dvbAdapterRegistry } from './dvb-adapter/registry.ts';
import { metricsRegistry } from './stream/metrics.ts';
import { streamRegistry } from './stream/registry.ts';

type Spec = SpecOf<'alerter'>;

export const ALERTER_SERVICE = new ServiceKey<Alerter>('alerter');

export function alerterSettings(spec: Spec): AlerterSettings {
  return {
    enable: spec.enable,
    webhookUrl: spec['webhook-url'],
    minSeverity: spec['min-severity'],
    repeatMs: spec['repeat-sec'] * 1000,
    clearMs: spec['clear-sec'] * 1000,
    delayMs: spec['delay-sec'] * 1000,
    p1Rate: spec['tr101290-p1-rate'],
    ccRate: spec['cc-error-rate'],
    errorWindowMs: spec['error-window-sec'] * 1000,
    historySize: spec['history-size'],
    webhookTimeoutMs: spec['webhook-timeout-sec'] * 1000,
    webhookRetries: spec['webhook-retries'],
    webhookQueueSize: spec['webhook-queue-size'],
  };
}

/** The running parts as the alerter sees them, read afresh at every sweep. */
export function alertSources(services: Services): AlertSources {
  return {
    streams: () =>
      streamRegistry(services)
        .all()
        .map((s) => ({
          name: s.name,
          running: s.running,
          alerts: () => s.alertList(),
          errorTotals: () => {
            const m = s.metricsSnapshot();
            const c = m.tr101290;
            if (!c || m.activeInput < 0) return null;
            let p1 = 0;
            for (const k of PRIORITY_1) p1 += c[k];
            return { input: m.activeInput, p1, cc: c.continuityCountError };
          },
          report: (key, present, message) => s.reportFault(key, present, message),
        })),
    storages: () =>
      [...dvrStorages(services).values()].map((d) => ({
        name: d.settings.name,
        state: d.state,
        message: d.message,
        diskFull: d.alarm,
        usedPercent: d.disk ? Math.round(usedPercent(d.disk) * 10) / 10 : 0,
        emergency: d.disk ? d.disk.free < d.settings.emergencyBytes : false,
        freeBytes: d.disk?.free ?? 0,
      })),
    epgSources: () => {
      const rt = services.get(EPG_SERVICE);
      if (!rt) return [];
      return [...rt.sourceStatus.entries()].map(([id, status]) => {
        // The runtime keeps each source's status untyped (XmltvSource's SourceStatus).
        const st = status() as { state?: unknown; lastError?: unknown };
        return {
          id,
          name: String(id),
          state: String(st.state ?? ''),
          ...(typeof st.lastError === 'string' ? { lastError: st.lastError } : {}),
        };
      });
    },
    adapters: () =>
      dvbAdapterRegistry(services)
        .all()
        .flatMap((a) => a.alertView() ?? []),
  };
}

const withMetrics = new WeakSet<Registry>();

function ensureAlerterMetrics(services: Services): void {
  const reg = metricsRegistry(services);
  if (withMetrics.has(reg)) return;
  withMetrics.add(reg);
  const alerter = () => services.get(ALERTER_SERVICE);
  new Counter({
    name: 'sluice_alerts_raised_total',
    help: 'Alerts raised, by rule and severity (below min-severity too: logged only)',
    labelNames: ['rule', 'severity'],
    registers: [reg],
    collect() {
      this.reset();
      for (const c of alerter()?.counts.raisedBy.values() ?? []) {
        this.inc({ rule: c.rule, severity: c.severity }, c.n);
      }
    },
  });
  const counter = (name: string, help: string, pick: (a: Alerter) => number) =>
    new Counter({
      name,
      help,
      registers: [reg],
      collect() {
        this.reset();
        const a = alerter();
        if (a) this.inc(pick(a));
      },
    });
  const gauge = (name: string, help: string, pick: (a: Alerter) => number) =>
    new Gauge({
      name,
      help,
      registers: [reg],
      collect() {
        const a = alerter();
        this.set(a ? pick(a) : 0);
      },
    });
  counter('sluice_alerts_cleared_total', 'Alerts cleared', (a) => a.counts.cleared);
  counter(
    'sluice_alerts_repeated_total',
    'Active alerts repeated (repeat-sec)',
    (a) => a.counts.repeated,
  );
  gauge('sluice_alerts_active', 'Active alerts at or above min-severity', (a) => a.active().length);
  counter(
    'sluice_alert_webhook_sent_total',
    'Alert events delivered to the webhook',
    (a) => a.webhookStats.sent,
  );
  counter(
    'sluice_alert_webhook_failed_total',
    'Alert events the webhook gave up on after every retry',
    (a) => a.webhookStats.failed,
  );
  counter(
    'sluice_alert_webhook_dropped_total',
    'Alert events dropped from the full webhook queue',
    (a) => a.webhookStats.dropped,
  );
  counter(
    'sluice_alert_webhook_retries_total',
    'Webhook POSTs retried',
    (a) => a.webhookStats.retries,
  );
  gauge(
    'sluice_alert_webhook_queue',
    'Alert events waiting for the webhook',
    (a) => a.webhookStats.queued,
  );
  gauge(
    'sluice_alert_feed_subscribers',
    'Clients of GET /data/alerts/events',
    (a) => a.feed.subscribers,
  );
}

class AlerterInstance implements Instance<Spec> {
  private readonly alerter: Alerter;

  constructor(
    spec: Spec,
    private readonly host: Host,
  ) {
    ensureAlerterMetrics(host.services);
    this.alerter = new Alerter(alerterSettings(spec), {
      clock: host.clock,
      log: host.log.child({ alerter: true }),
      sources: alertSources(host.services),
      post: httpPost,
      server: os.hostname(),
    });
    host.services.set(ALERTER_SERVICE, this.alerter);
  }

  async update(next: Resource<Spec>): Promise<void> {
    this.alerter.update(alerterSettings(next.spec));
  }

  async close(): Promise<void> {
    this.alerter.close();
    if (this.host.services.get(ALERTER_SERVICE) === this.alerter) {
      this.host.services.delete(ALERTER_SERVICE);
    }
  }

  status(): ResourceStatus {
    const { raised, cleared, repeated, logOnly } = this.alerter.counts;
    return {
      state: 'running',
      enabled: this.alerter.enabled,
      active: this.alerter.active().length,
      raised,
      cleared,
      repeated,
      logOnly,
      webhook: { ...this.alerter.webhookStats },
    };
  }
}

export const alerterDriver: KindDriver<'alerter'> = {
  kind: 'alerter',
  async create(res, host) {
    return new AlerterInstance(res.spec, host);
  },
};
