// Running archive totals per stream and track (bytes, seconds, chunks, span), read once from
// the index when it opens and then kept up to date as chunks are inserted and deleted, so
// /data/dvr-storage-list and size cleanup never need a GROUP BY over the whole index.
import {
  type ArchiveIndex,
  mainTotals,
  type NewChunk,
  type StreamTotals,
  type TrackTotals,
} from './index-db.ts';

type Row = Pick<NewChunk, 'stream' | 'track' | 'start_ms' | 'duration' | 'bytes'>;

export class RunningTotals {
  private tracks = new Map<string, TrackTotals>();
  private view?: Map<string, StreamTotals>;

  /** Start over from the index (on open, or after it was written behind our back). */
  reset(index: ArchiveIndex | undefined): void {
    this.tracks.clear();
    this.view = undefined;
    for (const r of index?.trackTotals() ?? []) this.tracks.set(key(r.stream, r.track), { ...r });
  }

  /** Rows just inserted (rows the index ignored must not be passed). */
  added(rows: Row[]): void {
    for (const r of rows) {
      const k = key(r.stream, r.track);
      const end = r.start_ms + r.duration * 1000;
      const t = this.tracks.get(k);
      if (!t) {
        const first = r.start_ms;
        this.tracks.set(k, { ...sum(r), first, last: end, chunks: 1 });
        continue;
      }
      t.bytes += r.bytes;
      t.seconds += r.duration;
      t.chunks++;
      if (r.start_ms < t.first) t.first = r.start_ms;
      if (end > t.last) t.last = end;
    }
    this.view = undefined;
  }

  /** Rows just deleted; the span of each touched track is read back from the index. */
  removed(rows: Row[], index: ArchiveIndex): void {
    const touched = new Set<string>();
    for (const r of rows) {
      const k = key(r.stream, r.track);
      const t = this.tracks.get(k);
      if (!t) continue;
      t.bytes -= r.bytes;
      t.seconds -= r.duration;
      t.chunks--;
      touched.add(k);
    }
    for (const k of touched) {
      const t = this.tracks.get(k)!;
      const span = t.chunks > 0 ? index.span(t.stream, t.track) : undefined;
      if (!span) {
        this.tracks.delete(k);
        continue;
      }
      t.first = span.first;
      t.last = span.last;
    }
    this.view = undefined;
  }

  /** Per stream: bytes of every track; seconds and span of the main track. */
  streams(): Map<string, StreamTotals> {
    this.view ??= mainTotals(this.tracks.values());
    return this.view;
  }
}

function key(stream: string, track: string): string {
  return `${stream}\u0000${track}`;
}

function sum(r: Row): Pick<TrackTotals, 'stream' | 'track' | 'bytes' | 'seconds'> {
  return { stream: r.stream, track: r.track, bytes: r.bytes, seconds: r.duration };
}
