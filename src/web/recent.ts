// How many TR 101 290 errors a stream had in the last minute: the rows carry totals since the
// input started, so one error at start-up would read red for good; the feed adds these.

/** The counters a row carries as totals. */
export type ErrorTotals = readonly [p1: number, p2: number, cc: number];

interface Window {
  /** The active input the totals belong to: a switch brings another input's totals. */
  active: number;
  samples: ErrorTotals[];
}

/** Per stream, the totals of the last `length` sweeps; the difference is the recent count. */
export class RecentErrors {
  private readonly windows = new Map<string, Window>();

  constructor(private readonly length: number) {}

  /** The counts since the oldest kept sweep; `sample` keeps these totals as a new sweep (a
   *  snapshot between sweeps reads without keeping). */
  observe(key: string, active: number, totals: ErrorTotals, sample: boolean): ErrorTotals {
    let w = this.windows.get(key);
    if (!w || w.active !== active) {
      w = { active, samples: [] };
      this.windows.set(key, w);
    }
    const base = w.samples[0] ?? totals;
    if (sample) {
      w.samples.push(totals);
      if (w.samples.length > this.length) w.samples.shift();
    }
    // A total that went down was reset (the input restarted): count from it afresh.
    return [recent(totals[0], base[0]), recent(totals[1], base[1]), recent(totals[2], base[2])];
  }

  forget(key: string): void {
    this.windows.delete(key);
  }
}

function recent(now: number, base: number): number {
  return now >= base ? now - base : now;
}
