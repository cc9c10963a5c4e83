// GET /metrics: Prometheus text from the server's registry, plus the API's own request counts.
import type { FastifyInstance } from 'fastify';
import {
  Counter,
  collectDefaultMetrics,
  Gauge,
  Histogram,
  type Registry,
  register,
} from 'prom-client';
import { METRICS_REGISTRY_SERVICE } from '../../drivers/stream/metrics.ts';
import type { LiveDeliveryStats } from '../../native/live-http.ts';
import { LIVE_DELIVERY_SERVICE } from '../../ott/live-publish.ts';
import { type PoolStats, segmentPool } from '../../ott/pool.ts';
import { LOOP_DELAY_SINK } from '../../util/loop-delay-sampler.ts';
import type { Services } from '../../util/services.ts';
import type { AppContext } from '../context.ts';
import { installMainLoopDelay } from '../loop-delay.ts';
import { installArchiveMetrics } from '../metrics-archive.ts';
import { installProcessMetrics } from '../metrics-process.ts';
import { installUdpInputMetrics } from '../metrics-udp.ts';

export const REQUESTS = 'sluice_api_requests_total';
const DURATION = 'sluice_api_request_duration_seconds';
/** Marks a registry that already collects the process metrics (they register once). */
const DEFAULTS_METRIC = 'process_cpu_user_seconds_total';
const DURATION_BUCKETS = [0.001, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5];
const LIVE_CONNECTIONS = 'sluice_live_delivery_connections';
/**
 * prom-client's process metrics, less the three gauges whose `_total` names break the
 * convention that `_total` is a counter (promtool refuses them); their per-type companions
 * (`nodejs_active_handles{type}` and the like) stay and sum to the same figure.
 */
export const DEFAULT_METRICS_DROPPED = [
  'nodejs_active_handles_total',
  'nodejs_active_requests_total',
  'nodejs_active_resources_total',
] as const;

export function installDefaultMetrics(registry: Registry): void {
  if (registry.getSingleMetric(DEFAULTS_METRIC)) return;
  collectDefaultMetrics({ register: registry });
  for (const name of DEFAULT_METRICS_DROPPED) registry.removeSingleMetric(name);
}

/** A counter whose total is kept elsewhere (`read`), brought up to it at each scrape. */
export function totalCounter(
  registry: Registry,
  name: string,
  help: string,
  read: () => number,
): void {
  let seen = 0;
  new Counter({
    name,
    help,
    registers: [registry],
    collect() {
      const v = read();
      if (v > seen) this.inc(v - seen);
      seen = v;
    },
  });
}

/** The native live engine's counters (src/native/live-http.ts), read at each scrape. */
export function installLiveDeliveryMetrics(
  registry: Registry,
  stats: () => LiveDeliveryStats,
): void {
  if (registry.getSingleMetric(LIVE_CONNECTIONS)) return;
  new Gauge({
    name: LIVE_CONNECTIONS,
    help: 'Connections the native live delivery engine holds now',
    registers: [registry],
    collect() {
      this.set(stats().connections);
    },
  });
  const counter = (name: string, help: string, key: keyof LiveDeliveryStats) =>
    totalCounter(registry, name, help, () => stats()[key]);
  counter(
    'sluice_live_delivery_responses_total',
    'Responses sent by the native live delivery engine',
    'served',
  );
  counter(
    'sluice_live_delivery_bytes_total',
    'Bytes sent by the native live delivery engine',
    'bytes',
  );
  counter(
    'sluice_live_delivery_adopted_total',
    'Connections the HTTP listener handed to the native live delivery engine',
    'adopted',
  );
  counter(
    'sluice_live_delivery_handed_back_total',
    'Connections the engine gave back to Node at a request it does not answer',
    'handedBack',
  );
}

const POOL_FREE = 'sluice_ott_segment_pool_free_bytes';

/** The HLS segment block pool (src/ott/pool.ts): blocks made, blocks reused, bytes kept free. */
export function installSegmentPoolMetrics(registry: Registry, stats: () => PoolStats): void {
  if (registry.getSingleMetric(POOL_FREE)) return;
  new Gauge({
    name: POOL_FREE,
    help: 'Bytes of free segment blocks the pool keeps for reuse',
    registers: [registry],
    collect() {
      this.set(stats().freeBytes);
    },
  });
  const counter = (name: string, help: string, key: 'allocated' | 'reused') =>
    totalCounter(registry, name, help, () => stats()[key]);
  counter(
    'sluice_ott_segment_pool_allocated_total',
    'Segment blocks allocated (no free block of the size was at hand)',
    'allocated',
  );
  counter(
    'sluice_ott_segment_pool_reused_total',
    'Segment blocks served from the free blocks',
    'reused',
  );
}

export function metricsRegistry(services: Services): Registry {
  return services.get(METRICS_REGISTRY_SERVICE) ?? register;
}

/** Count every request of `app` (call on the root instance so all routes are covered). */
export function installRequestMetrics(app: FastifyInstance, registry: Registry): void {
  // Several apps may share one registry (tests, HTTP + HTTPS): reuse the metric if present.
  const requests =
    (registry.getSingleMetric(REQUESTS) as Counter<'method' | 'route' | 'status'> | undefined) ??
    new Counter({
      name: REQUESTS,
      help: 'Admin API requests by method, route pattern and status code',
      labelNames: ['method', 'route', 'status'],
      registers: [registry],
    });
  const duration =
    (registry.getSingleMetric(DURATION) as Histogram<'method' | 'route'> | undefined) ??
    new Histogram({
      name: DURATION,
      help: 'Admin API request duration by method and route pattern',
      labelNames: ['method', 'route'],
      buckets: DURATION_BUCKETS,
      registers: [registry],
    });
  // Labels use the route pattern, never the raw URL, so the label set stays bounded.
  app.addHook('onResponse', async (req, reply) => {
    const route = req.routeOptions.url ?? 'unmatched';
    requests.inc({ method: req.method, route, status: String(reply.statusCode) });
    duration.observe({ method: req.method, route }, reply.elapsedTime / 1000);
  });
}

/** Per registry: functions run before each scrape (counts kept elsewhere, folded in then). */
const scrapeHooks = new WeakMap<Registry, (() => void)[]>();

/** Run `fn` before every `/metrics` scrape of `registry`. */
export function onScrape(registry: Registry, fn: () => void): void {
  const list = scrapeHooks.get(registry) ?? [];
  list.push(fn);
  scrapeHooks.set(registry, list);
}

export async function metricsRoutes(
  app: FastifyInstance,
  opts: { ctx: AppContext },
): Promise<void> {
  const registry = metricsRegistry(opts.ctx.services);
  installDefaultMetrics(registry);
  // Stream workers post their loops' counts (src/plane/): they go into the same histogram.
  opts.ctx.services.set(LOOP_DELAY_SINK, installMainLoopDelay(registry));
  const delivery = opts.ctx.services.get(LIVE_DELIVERY_SERVICE);
  if (delivery) installLiveDeliveryMetrics(registry, () => delivery.stats());
  installSegmentPoolMetrics(registry, () => segmentPool.stats());
  installUdpInputMetrics(registry, opts.ctx.services);
  installArchiveMetrics(registry, opts.ctx.services, opts.ctx.clock);
  installProcessMetrics(registry, opts.ctx.services);
  app.get('/metrics', {
    schema: {
      tags: ['data'],
      summary: 'Prometheus metrics (text exposition format)',
      response: { 200: { type: 'string' } },
    },
    handler: async (_req, reply) => {
      for (const fn of scrapeHooks.get(registry) ?? []) fn();
      reply.type(registry.contentType);
      return registry.metrics();
    },
  });
}
