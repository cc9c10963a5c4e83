// /data/dvrstat: how full the archive is over time. For each storage and stream, the seconds
// recorded per bucket of `step` seconds (as a fill percentage of the bucket) with the event
// markers (source start/stop, PMT change, cleanup run, …) that fall in the range.
import { TS_TRACK } from './index-db.ts';
import type { ArchiveStorage } from './storage.ts';

export const DVRSTAT_DEFAULT_RANGE_SEC = 86_400;
export const DVRSTAT_DEFAULT_STEP_SEC = 3_600;
export const DVRSTAT_MIN_STEP_SEC = 10;
/** Buckets per stream at most; a finer step is coarsened to fit. */
export const DVRSTAT_MAX_BUCKETS = 2_000;

export interface DvrStatQuery {
  storage?: number;
  stream?: string;
  /** Epoch seconds. */
  from?: number;
  to?: number;
  step?: number;
}

export interface DvrStatBucket {
  t: number;
  'recorded-sec': number;
  'fill-percent': number;
  bytes: number;
}

export interface DvrStatStream {
  name: string;
  buckets: DvrStatBucket[];
  markers: { t: number; kind: string; detail: string }[];
}

export interface DvrStat {
  from: number;
  to: number;
  step: number;
  storages: { id: number; name: string; state: string; streams: DvrStatStream[] }[];
}

export function dvrStat(storages: ArchiveStorage[], q: DvrStatQuery, nowMs: number): DvrStat {
  const to = Math.floor(q.to ?? nowMs / 1000);
  const from = Math.floor(q.from ?? to - DVRSTAT_DEFAULT_RANGE_SEC);
  let step = Math.max(DVRSTAT_MIN_STEP_SEC, Math.floor(q.step ?? DVRSTAT_DEFAULT_STEP_SEC));
  const span = Math.max(0, to - from);
  if (span / step > DVRSTAT_MAX_BUCKETS) step = Math.ceil(span / DVRSTAT_MAX_BUCKETS);
  const out: DvrStat = { from, to, step, storages: [] };
  for (const s of storages) {
    if (q.storage !== undefined && s.settings.id !== q.storage) continue;
    const entry = {
      id: s.settings.id,
      name: s.settings.name,
      state: s.status().state,
      streams: [] as DvrStatStream[],
    };
    out.storages.push(entry);
    const index = s.index;
    if (!index || span === 0) continue;
    const rows = index.fill(from * 1000, to * 1000, step * 1000, q.stream ?? '');
    const markers = index.markers(from * 1000, to * 1000, q.stream ?? '');
    const byStream = new Map<
      string,
      Map<string, Map<number, { seconds: number; bytes: number }>>
    >();
    for (const r of rows) {
      const tracks = byStream.get(r.stream) ?? new Map();
      byStream.set(r.stream, tracks);
      const b = tracks.get(r.track) ?? new Map();
      tracks.set(r.track, b);
      b.set(r.bucket, { seconds: r.seconds, bytes: r.bytes });
    }
    const names = new Set([...byStream.keys(), ...markers.map((m) => m.stream)]);
    for (const name of [...names].sort()) {
      const tracks = byStream.get(name) ?? new Map();
      const mainId = tracks.has(TS_TRACK) ? TS_TRACK : [...tracks.keys()].sort()[0];
      const main = mainId ? tracks.get(mainId)! : new Map();
      const bytes = new Map<number, number>();
      for (const t of tracks.values())
        for (const [k, v] of t) bytes.set(k, (bytes.get(k) ?? 0) + v.bytes);
      const buckets: DvrStatBucket[] = [];
      const n = Math.ceil(span / step);
      for (let i = 0; i < n; i++) {
        const sec = main.get(i)?.seconds ?? 0;
        const len = Math.min(step, to - (from + i * step));
        buckets.push({
          t: from + i * step,
          'recorded-sec': Math.round(sec * 1000) / 1000,
          'fill-percent': Math.min(100, Math.round((sec / len) * 10_000) / 100),
          bytes: bytes.get(i) ?? 0,
        });
      }
      out.storages[out.storages.length - 1]!.streams.push({
        name,
        buckets,
        markers: markers
          .filter((m) => m.stream === name)
          .map((m) => ({ t: Math.floor(m.at_ms / 1000), kind: m.kind, detail: m.detail })),
      });
    }
  }
  return out;
}
