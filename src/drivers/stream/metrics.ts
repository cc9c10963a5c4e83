// Prometheus metrics of the streams (prom-client), computed from the running instances at
// scrape time. The registry lives in host.services 'metrics-registry'; when absent, prom-client's
// default registry is used and put there (the API's /metrics falls back to the same one).
import { Counter, Gauge, type Registry, register } from 'prom-client';
import { PRIORITY_1, PRIORITY_2 } from '../../native/ts.ts';
import { streamRegistry } from './registry.ts';

export const METRICS_REGISTRY_SERVICE = 'metrics-registry';
const done = new WeakSet<Registry>();

export function metricsRegistry(services: Map<string, unknown>): Registry {
  let r = services.get(METRICS_REGISTRY_SERVICE) as Registry | undefined;
  if (!r) {
    r = register;
    services.set(METRICS_REGISTRY_SERVICE, r);
  }
  return r;
}

const STATE_VALUES = ['paused', 'starting', 'running', 'no-signal', 'error'] as const;

export function ensureStreamMetrics(services: Map<string, unknown>): void {
  const reg = metricsRegistry(services);
  if (done.has(reg)) return;
  done.add(reg);
  const streams = () => streamRegistry(services).all();
  const registers = [reg];
  new Gauge({
    name: 'sluice_stream_state',
    help: 'Stream state: 1 for the current state of each stream',
    labelNames: ['stream', 'state'],
    registers,
    collect() {
      this.reset();
      for (const s of streams()) {
        const cur = s.state();
        for (const st of STATE_VALUES) this.set({ stream: s.name, state: st }, st === cur ? 1 : 0);
      }
    },
  });
  const simple = (name: string, help: string, pick: (st: Record<string, unknown>) => number) =>
    new Gauge({
      name,
      help,
      labelNames: ['stream'],
      registers,
      collect() {
        this.reset();
        for (const s of streams()) this.set({ stream: s.name }, pick(s.status()));
      },
    });
  simple(
    'sluice_stream_bitrate_in_bits',
    'Bitrate of the active input, bit/s',
    (st) => Number(st['bitrateIn']) || 0,
  );
  simple(
    'sluice_stream_bitrate_out_bits',
    'Bitrate of the output, bit/s',
    (st) => Number(st['bitrateOut']) || 0,
  );
  simple('sluice_stream_active_input', 'Index of the active input (-1 none)', (st) =>
    Number(st['activeInput']),
  );
  // A `_total` name is a counter in Prometheus' conventions (rate() and promtool expect it).
  new Counter({
    name: 'sluice_stream_switches_total',
    help: 'Input switches since the stream started',
    labelNames: ['stream'],
    registers,
    collect() {
      this.reset();
      for (const s of streams())
        this.inc({ stream: s.name }, Number(s.status()['switchCount']) || 0);
    },
  });
  simple(
    'sluice_stream_http_clients',
    'HTTP-TS clients connected',
    (st) => (st['httpTs'] as { clients: number }).clients,
  );
  new Gauge({
    name: 'sluice_stream_tr101290_errors',
    help: 'TR 101 290 indicator counts on the active input since it was opened',
    labelNames: ['stream', 'indicator', 'priority'],
    registers,
    collect() {
      this.reset();
      for (const s of streams()) {
        const tr = s.status()['tr101290'] as Record<string, number> | null;
        if (!tr) continue;
        for (const k of PRIORITY_1)
          this.set({ stream: s.name, indicator: k, priority: '1' }, tr[k] ?? 0);
        for (const k of PRIORITY_2)
          this.set({ stream: s.name, indicator: k, priority: '2' }, tr[k] ?? 0);
      }
    },
  });
}
