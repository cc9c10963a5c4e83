// One event loop's delay, sampled by Node's native timer (perf_hooks.monitorEventLoopDelay, no
// JavaScript timer) and handed out as bucket counts: plain data a worker thread can post to the
// main thread, whose exporter (src/api/loop-delay.ts) adds them up for /metrics.
import { type Histogram, monitorEventLoopDelay } from 'node:perf_hooks';
import { ServiceKey } from './services.ts';

/** How often the native timer is due (ms): finer costs wake-ups, coarser misses short stalls. */
export const LOOP_RESOLUTION_MS = 10;
/** Bucket bounds (seconds of delay), from well under the 10 ms goal to stalls of seconds. */
export const LOOP_DELAY_BUCKETS = [
  0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10,
] as const;

/** A loop's delay samples since the previous take, each a timer run's lateness. */
export interface LoopDelayCounts {
  loop: string;
  /** Samples per bucket, not cumulative: one per LOOP_DELAY_BUCKETS bound, then the rest. */
  buckets: number[];
  count: number;
  /** Seconds of delay, all samples together. */
  sum: number;
  /** The longest sample since the sampler started (seconds), 0 with none. */
  max: number;
}

export interface LoopDelaySampler {
  /** The samples recorded since the previous take. */
  take(): LoopDelayCounts;
  stop(): void;
}

/**
 * Sample the loop this is called on. Node's timer records the time between two of its runs;
 * the delay is that less the resolution, so a 2 s stall is one sample of 2 s. The histogram is
 * never reset (a reset also forgets the previous run, losing the interval it falls in, stall
 * and all): a take is the difference from the previous one.
 */
export function loopDelaySampler(
  loop: string,
  resolutionMs = LOOP_RESOLUTION_MS,
): LoopDelaySampler {
  const h = monitorEventLoopDelay({ resolution: resolutionMs });
  h.enable();
  const resNs = resolutionMs * 1e6;
  let seen: LoopDelayCounts = { loop, buckets: [], count: 0, sum: 0, max: 0 };
  return {
    take() {
      const count = h.count;
      const now: LoopDelayCounts = {
        loop,
        buckets: bucketCounts(h, resNs),
        count,
        sum: count > 0 ? Math.max(0, (h.mean - resNs) * count) / 1e9 : 0,
        max: count > 0 ? Math.max(0, h.max - resNs) / 1e9 : 0,
      };
      const out = {
        ...now,
        buckets: now.buckets.map((n, i) => n - (seen.buckets[i] ?? 0)),
        count: count - seen.count,
        sum: Math.max(0, now.sum - seen.sum),
      };
      seen = now;
      return out;
    },
    stop: () => h.disable(),
  };
}

/**
 * Samples per bucket, from the histogram's order statistics: `percentile(k / n · 100)` is the
 * k-th smallest sample, so the samples at or under a bound are the largest such k whose value
 * is (a binary search; the bounds rise, so each search starts where the last one ended).
 */
export function bucketCounts(h: Histogram, resNs: number): number[] {
  const n = h.count;
  const out: number[] = [];
  let below = 0;
  for (const bound of LOOP_DELAY_BUCKETS) {
    const limit = resNs + bound * 1e9;
    let k: number;
    if (n === 0 || h.min > limit) k = below;
    else if (h.max <= limit) k = n;
    else {
      let lo = below; // a count of samples known to be at or under the limit
      let hi = n; // one known not to be (the largest sample is over it)
      while (hi - lo > 1) {
        const mid = (lo + hi) >>> 1;
        if (h.percentile((mid / n) * 100) <= limit) lo = mid;
        else hi = mid;
      }
      k = lo;
    }
    out.push(k - below);
    below = k;
  }
  out.push(n - below);
  return out;
}

/** Where another thread's loop counts go (host.services): the /metrics exporter adds them. */
export const LOOP_DELAY_SINK = new ServiceKey<{ add(counts: LoopDelayCounts): void }>(
  'loop-delay-sink',
);
