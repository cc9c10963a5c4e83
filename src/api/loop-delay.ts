// The event loops' delay on /metrics: a histogram per loop that only grows for the process's
// life, fed by loop-delay samplers (src/util/loop-delay-sampler.ts) of any thread (docs/api.md).
import {
  Counter,
  Gauge,
  Histogram,
  type MetricObjectWithValues,
  type MetricValueWithName,
  type Registry,
} from 'prom-client';
import {
  LOOP_DELAY_BUCKETS,
  type LoopDelayCounts,
  loopDelaySampler,
} from '../util/loop-delay-sampler.ts';

export const LOOP_DELAY = 'sluice_eventloop_delay_seconds';
export const LOOP_DELAY_MAX = 'sluice_eventloop_delay_max_seconds';
export const LOOP_STALLED = 'sluice_eventloop_stalled_seconds_total';

/** Where a loop's counts come from: what the main loop's exporter itself takes at a scrape. */
export type LoopDelaySource = () => LoopDelayCounts;

export interface LoopDelayExporter {
  /** Add counts taken since the previous ones of the same loop (a worker posts them). */
  add(counts: LoopDelayCounts): void;
  /** Take from `source` before each scrape. */
  pull(source: LoopDelaySource): void;
}

const HELP =
  'How late the native timer due every 10 ms ran, by event loop (a stall is one sample of its length)';

interface Totals {
  buckets: number[];
  count: number;
  sum: number;
  max: number;
}

/** The histogram of accumulated counts: its series are whatever `totals` holds at a scrape. */
class LoopDelayHistogram extends Histogram<'loop'> {
  constructor(
    registry: Registry,
    private readonly totals: Map<string, Totals>,
    private readonly beforeScrape: () => void,
  ) {
    super({
      name: LOOP_DELAY,
      help: HELP,
      labelNames: ['loop'],
      buckets: [...LOOP_DELAY_BUCKETS],
      registers: [registry],
    });
  }

  override async get() {
    this.beforeScrape();
    const values = [];
    for (const [loop, t] of this.totals) {
      let acc = 0;
      for (const [i, bound] of [...LOOP_DELAY_BUCKETS, '+Inf' as const].entries()) {
        acc += t.buckets[i]!;
        values.push({
          labels: { le: bound, loop },
          value: acc,
          metricName: `${LOOP_DELAY}_bucket`,
        });
      }
      values.push({ labels: { loop }, value: t.sum, metricName: `${LOOP_DELAY}_sum` });
      values.push({ labels: { loop }, value: t.count, metricName: `${LOOP_DELAY}_count` });
    }
    // The shape prom-client's own histogram answers (its types leave out the `le` label).
    const metric = { name: LOOP_DELAY, help: HELP, type: 'histogram', aggregator: 'sum', values };
    return metric as unknown as MetricObjectWithValues<MetricValueWithName<'loop'>>;
  }

  /** What prom-client's registry asks a histogram for when it writes the text format. */
  getForPromString() {
    return this.get();
  }
}

const exporters = new WeakMap<Registry, LoopDelayExporter>();

/** The loop-delay exporter of `registry`, made on first use. */
export function loopDelayExporter(registry: Registry): LoopDelayExporter {
  const made = exporters.get(registry);
  if (made) return made;
  const totals = new Map<string, Totals>();
  const sources: LoopDelaySource[] = [];
  const exporter: LoopDelayExporter = {
    add(c) {
      let t = totals.get(c.loop);
      if (!t) {
        t = { buckets: c.buckets.map(() => 0), count: 0, sum: 0, max: 0 };
        totals.set(c.loop, t);
      }
      for (const [i, n] of c.buckets.entries()) t.buckets[i]! += n;
      t.count += c.count;
      t.sum += c.sum;
      t.max = Math.max(t.max, c.max);
    },
    pull: (source) => sources.push(source),
  };
  // Each metric of a scrape takes from the sources first; a take right after another adds
  // the few samples between them, so the three stay consistent.
  const takeAll = () => {
    for (const s of sources) exporter.add(s());
  };
  new LoopDelayHistogram(registry, totals, takeAll);
  new Gauge({
    name: LOOP_DELAY_MAX,
    help: 'Longest loop delay seen since the server started, by event loop',
    labelNames: ['loop'],
    registers: [registry],
    collect() {
      takeAll();
      for (const [loop, t] of totals) this.set({ loop }, t.max);
    },
  });
  new Counter({
    name: LOOP_STALLED,
    help: 'Seconds a loop ran late, all samples together (the histogram sum as a counter), by event loop',
    labelNames: ['loop'],
    registers: [registry],
    collect() {
      takeAll();
      this.reset();
      for (const [loop, t] of totals) this.inc({ loop }, t.sum);
    },
  });
  exporters.set(registry, exporter);
  return exporter;
}

const mainSampled = new WeakSet<Registry>();

/** The main thread's loop (`loop="main"`), sampled for the process's life, once per registry. */
export function installMainLoopDelay(registry: Registry): LoopDelayExporter {
  const exporter = loopDelayExporter(registry);
  if (!mainSampled.has(registry)) {
    mainSampled.add(registry);
    const sampler = loopDelaySampler('main');
    exporter.pull(() => sampler.take());
    exporter.add(sampler.take()); // the series is there from the first scrape
  }
  return exporter;
}
