// The server's event-loop delay over a bench's window, read from two /metrics scrapes: the
// summary form (quantiles reset by each scrape) or the histogram form (buckets that only grow,
// one series per loop: the window is the difference of the two scrapes).

export interface LoopDelay {
  /** Seconds; NaN when /metrics has no loop-delay figure. */
  p99: number;
  max: number;
}

const NAME = 'sluice_eventloop_delay_seconds';

/** Bucket counts of loop `loop` (or of the unlabelled series), by upper bound. */
function buckets(text: string, loop: string): Map<number, number> {
  const m = new Map<number, number>();
  const re = new RegExp(`^${NAME}_bucket\\{([^}]*)\\} (\\S+)$`, 'gm');
  for (const [, labels, value] of text.matchAll(re)) {
    const l = /loop="([^"]*)"/.exec(labels!)?.[1];
    if (l !== undefined && l !== loop) continue;
    const le = /le="([^"]*)"/.exec(labels!)?.[1];
    if (le !== undefined) m.set(le === '+Inf' ? Infinity : Number(le), Number(value));
  }
  return m;
}

/** p99 and max of the loop delay between scrape `before` and scrape `after`. From a histogram
 *  the p99 is the upper bound of the bucket it falls in and the max the loop's longest since
 *  start (`…_max_seconds`); from a summary, its own quantiles. */
export function loopDelayOver(before: string, after: string, loop = 'main'): LoopDelay {
  const q = (quantile: string) =>
    Number(new RegExp(`^${NAME}\\{quantile="${quantile}"\\} (\\S+)`, 'm').exec(after)?.[1] ?? NaN);
  if (!Number.isNaN(q('0.99'))) return { p99: q('0.99'), max: q('1') };
  const b0 = buckets(before, loop);
  const b1 = buckets(after, loop);
  const total = (b1.get(Infinity) ?? 0) - (b0.get(Infinity) ?? 0);
  const maxRe = new RegExp(
    `^sluice_eventloop_delay_max_seconds(?:\\{[^}]*loop="${loop}"[^}]*\\})? (\\S+)`,
    'm',
  );
  const max = Number(maxRe.exec(after)?.[1] ?? NaN);
  if (!(total > 0)) return { p99: NaN, max };
  for (const le of [...b1.keys()].sort((a, b) => a - b)) {
    if ((b1.get(le) ?? 0) - (b0.get(le) ?? 0) >= 0.99 * total) return { p99: le, max };
  }
  return { p99: Infinity, max };
}
