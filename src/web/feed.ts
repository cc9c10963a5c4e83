// The dashboard's live feed: every second it reads the stream rows and the tuner adapter rows,
// keeps a short bit-rate history per stream and hands the changes since the last sweep to its
// subscribers (the `/data/events` Server-Sent Events stream). Time comes from the injected clock.
import type { Clock, Timer } from '../util/clock.ts';
import { maskCredentials } from '../util/credentials.ts';
import { RecentErrors } from './recent.ts';
import { type AdapterRow, rowChange, type StreamRow } from './rows.ts';

/** A sweep's changes: changed rows (only the fields that changed, with `key`) and the keys of
 *  the streams that are gone; `adapters` the same for the tuner adapters, when any changed. */
export interface FeedDelta {
  t: number;
  changed: Partial<StreamRow>[];
  removed: string[];
  adapters?: { changed: Partial<AdapterRow>[]; removed: string[] };
}

/** What a new client gets first: every row and the bit-rate history (in, out; oldest first). */
export interface FeedSnapshot {
  t: number;
  intervalMs: number;
  rows: StreamRow[];
  history: Record<string, [number[], number[]]>;
  adapters: AdapterRow[];
}

export interface FeedOptions {
  clock: Clock;
  rows: () => StreamRow[];
  /** The tuner adapters' rows (none when not given). */
  adapters?: () => AdapterRow[];
  /** Sweep period; the default suits a bit-rate sparkline. */
  intervalMs?: number;
  /** Samples of history kept per stream. */
  historyLength?: number;
}

export const FEED_INTERVAL_MS = 1000;
export const FEED_HISTORY = 60;

/** The rows of `rows` that differ from `last` (changed fields only) and the keys gone. A
 *  message (an input's URL may be in it) goes out with its credentials masked. */
function diff<R extends { key: string; message?: string }>(
  last: Map<string, R>,
  rows: R[],
): { next: Map<string, R>; changed: Partial<R>[]; removed: string[] } {
  const next = new Map<string, R>();
  const changed: Partial<R>[] = [];
  for (const read of rows) {
    const row = read.message ? { ...read, message: maskCredentials(read.message) } : read;
    next.set(row.key, row);
    const c = rowChange(last.get(row.key), row);
    if (c) changed.push(c);
  }
  const removed = [...last.keys()].filter((k) => !next.has(k));
  return { next, changed, removed };
}

export class StreamFeed {
  private last = new Map<string, StreamRow>();
  private lastAdapters = new Map<string, AdapterRow>();
  private readonly history = new Map<string, [number[], number[]]>();
  private readonly recent: RecentErrors;
  private readonly listeners = new Set<(d: FeedDelta) => void>();
  private timer: Timer | null = null;
  readonly intervalMs: number;
  private readonly historyLength: number;

  constructor(private readonly opts: FeedOptions) {
    this.intervalMs = opts.intervalMs ?? FEED_INTERVAL_MS;
    this.historyLength = opts.historyLength ?? FEED_HISTORY;
    this.recent = new RecentErrors(this.historyLength);
  }

  start(): void {
    if (this.timer) return;
    this.sweep();
    this.timer = this.opts.clock.setInterval(() => this.sweep(), this.intervalMs);
  }

  close(): void {
    this.timer?.cancel();
    this.timer = null;
    this.listeners.clear();
  }

  /** Returns the function that unsubscribes. A listener that throws is dropped. */
  subscribe(fn: (d: FeedDelta) => void): () => void {
    this.listeners.add(fn);
    return () => this.listeners.delete(fn);
  }

  get subscribers(): number {
    return this.listeners.size;
  }

  /** The rows as they are now (a new client must not wait for the next sweep to see streams
   *  created since the last one): the rows are read again and any change goes to the current
   *  subscribers as a delta first, so they and the new client agree. No history sample is
   *  taken, so the sparklines keep one sample per interval. */
  snapshot(): FeedSnapshot {
    this.sweep(false);
    const history: FeedSnapshot['history'] = {};
    for (const [key, h] of this.history) {
      // Streams that never carried a bit are left out: a thousand paused streams cost nothing.
      if (h[0].some((v) => v > 0) || h[1].some((v) => v > 0)) history[key] = h;
    }
    return {
      t: this.opts.clock.now(),
      intervalMs: this.intervalMs,
      rows: [...this.last.values()],
      history,
      adapters: [...this.lastAdapters.values()],
    };
  }

  /** Read the rows once, record history, publish the changes. */
  sweep(sample = true): FeedDelta {
    const rows = this.opts.rows().map((r) => this.withRecent(r, sample));
    const { next, changed, removed } = diff(this.last, rows);
    if (sample) for (const row of rows) this.record(row);
    for (const k of removed) {
      this.history.delete(k);
      this.recent.forget(k);
    }
    if (!sample) {
      // A stream first seen here gets its first sample now; the others wait for the sweep.
      for (const row of rows) if (!this.history.has(row.key)) this.record(row);
    }
    this.last = next;
    const delta: FeedDelta = { t: this.opts.clock.now(), changed, removed };
    const a = diff(this.lastAdapters, this.opts.adapters?.() ?? []);
    this.lastAdapters = a.next;
    if (a.changed.length > 0 || a.removed.length > 0) {
      delta.adapters = { changed: a.changed, removed: a.removed };
    }
    if (changed.length > 0 || removed.length > 0 || delta.adapters) this.publish(delta);
    return delta;
  }

  /** The row with its error counts of the last minute (history length × interval). */
  private withRecent(row: StreamRow, sample: boolean): StreamRow {
    const [p1m, p2m, ccm] = this.recent.observe(
      row.key,
      row.active,
      [row.p1, row.p2, row.cc],
      sample,
    );
    return { ...row, p1m, p2m, ccm };
  }

  private record(row: StreamRow): void {
    let h = this.history.get(row.key);
    if (!h) {
      h = [[], []];
      this.history.set(row.key, h);
    }
    h[0].push(row.in);
    h[1].push(row.out);
    if (h[0].length > this.historyLength) {
      h[0].shift();
      h[1].shift();
    }
  }

  private publish(d: FeedDelta): void {
    for (const fn of this.listeners) {
      try {
        fn(d);
      } catch {
        this.listeners.delete(fn);
      }
    }
  }
}
