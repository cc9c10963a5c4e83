// The three index-driven cleanup strategies of spec 3 (rolling, size-based, emergency). Each
// chooses chunks from the index; the caller removes them from the index first and unlinks
// the files after, so a crash in between leaves only orphans (collected by the orphan scan).
import {
  type ArchiveIndex,
  type ChunkRow,
  CURSOR_START,
  type Cursor,
  TS_TRACK,
} from './index-db.ts';
import { HOUR_MS } from './settings.ts';

/** Rows read from the index per query while choosing. */
const PAGE = 2_000;
/** Rolling cleanup removes at most this many chunks per stream per pass (the rest next pass). */
export const ROLLING_MAX_PER_PASS = 50_000;

export interface ProtectedRange {
  stream: string;
  from: number;
  to: number;
}

export interface BoundStream {
  name: string;
  hours: number;
  minHours: number;
}

function isProtected(row: ChunkRow, ranges: ProtectedRange[]): boolean {
  for (const r of ranges) {
    if (r.stream === row.stream && row.start_ms >= r.from && row.start_ms < r.to) return true;
  }
  return false;
}

/** Pages through the chunks of a stream starting before `before`, oldest first. */
function* pages(index: ArchiveIndex, stream: string, before: number): Generator<ChunkRow> {
  let cursor: Cursor = CURSOR_START;
  for (;;) {
    const rows = index.oldest(stream, cursor, before, PAGE);
    for (const r of rows) yield r;
    if (rows.length < PAGE) return;
    const last = rows[rows.length - 1]!;
    cursor = { start: last.start_ms, id: last.id };
  }
}

/** Rolling: every chunk older than the stream's hours, except those an open session protects. */
export function chooseRolling(
  index: ArchiveIndex,
  streams: BoundStream[],
  now: number,
  ranges: ProtectedRange[],
): ChunkRow[] {
  const out: ChunkRow[] = [];
  for (const s of streams) {
    let n = 0;
    for (const row of pages(index, s.name, now - s.hours * HOUR_MS)) {
      if (isProtected(row, ranges)) continue;
      out.push(row);
      if (++n >= ROLLING_MAX_PER_PASS) break;
    }
  }
  return out;
}

/** The track whose durations count as "seconds of video" for a stream. */
export function mainTrack(index: ArchiveIndex, stream: string): string | undefined {
  const tracks = index.tracks(stream);
  if (tracks.includes(TS_TRACK)) return TS_TRACK;
  return tracks.sort()[0];
}

export interface TrimOptions {
  /** Bytes to free in total. */
  needBytes: number;
  now: number;
  /** Per-stream bytes (shares are proportional to them). */
  bytes: Map<string, number>;
  /** Size-based: seconds of video per stream per pass; Infinity for the emergency cut. */
  cutSec: number;
  /** Size-based honours these; the emergency cut passes none and minHours 0. */
  ranges: ProtectedRange[];
  minHours: Map<string, number>;
}

/**
 * Oldest-first trim spread over streams in proportion to their archived bytes: each stream
 * gives its share of `needBytes`, at most `cutSec` seconds of its main track, never chunks
 * younger than its min hours or inside a protected range.
 */
export function chooseTrim(index: ArchiveIndex, streams: string[], o: TrimOptions): ChunkRow[] {
  let total = 0;
  for (const s of streams) total += o.bytes.get(s) ?? 0;
  if (total <= 0 || o.needBytes <= 0) return [];
  const out: ChunkRow[] = [];
  for (const s of streams) {
    const share = (o.needBytes * (o.bytes.get(s) ?? 0)) / total;
    if (share <= 0) continue;
    const main = mainTrack(index, s);
    const before = o.now - (o.minHours.get(s) ?? 0) * HOUR_MS;
    let freed = 0;
    let seconds = 0;
    // Once the share or the cut is reached, only the other tracks' chunks that start inside
    // the last removed main chunk still go, so every track is cut at the same instant.
    let stopAt = Number.NaN;
    let mainEnd = Number.NEGATIVE_INFINITY;
    for (const row of pages(index, s, before)) {
      if (isProtected(row, o.ranges)) continue;
      const done = !Number.isNaN(stopAt);
      if (row.track === main) {
        if (done || seconds + row.duration > o.cutSec) {
          if (!done) stopAt = mainEnd;
          if (row.start_ms >= stopAt) break;
          continue;
        }
        seconds += row.duration;
        mainEnd = row.start_ms + row.duration * 1000;
      } else if (done && row.start_ms >= stopAt) break;
      out.push(row);
      freed += row.bytes;
      if (!done && freed >= share && row.track === main) stopAt = mainEnd;
    }
  }
  return out;
}
