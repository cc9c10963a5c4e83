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
  /** Per-stream archived bytes (every track) and seconds (main track). */
  bytes: Map<string, number>;
  seconds: Map<string, number>;
  /** Size-based: seconds of video per stream per pass; Infinity for the emergency cut. */
  cutSec: number;
  /** Size-based honours these; the emergency cut passes none and minHours 0. */
  ranges: ProtectedRange[];
  minHours: Map<string, number>;
  /** Seconds each stream gave over (−) or short of (+) its share in earlier passes, when a
   *  whole chunk did not fit it; read and updated here, kept by the caller between passes. */
  owed?: Map<string, number>;
}

/**
 * Seconds of video each stream gives this pass: the same fraction of every stream's archive
 * (the fraction of all archived bytes that `needBytes` is), plus what it owed from earlier
 * passes. A 4 s-segment stream and a 1 s one thus lose the same share of their depth.
 */
export function trimQuotas(
  needBytes: number,
  bytes: Map<string, number>,
  seconds: Map<string, number>,
  owed: Map<string, number> = new Map(),
): Map<string, number> {
  let total = 0;
  for (const b of bytes.values()) total += b;
  const out = new Map<string, number>();
  if (total <= 0 || needBytes <= 0) return out;
  const fraction = Math.min(1, needBytes / total);
  for (const [s, sec] of seconds) {
    if ((bytes.get(s) ?? 0) <= 0) continue;
    out.set(s, fraction * sec + (owed.get(s) ?? 0));
  }
  return out;
}

/** One stream's side of a trim: its oldest chunks taken main chunk by main chunk, the other
 *  tracks' chunks starting before the end of the last main chunk taken going with it. */
class StreamCut {
  readonly rows: ChunkRow[] = [];
  seconds = 0;
  freed = 0;
  private next?: ChunkRow;
  private held: ChunkRow[] = [];
  private end = Number.NEGATIVE_INFINITY;
  private it: Generator<ChunkRow>;

  constructor(
    index: ArchiveIndex,
    readonly name: string,
    readonly quota: number,
    private main: string | undefined,
    before: number,
    private ranges: ProtectedRange[],
  ) {
    this.it = pages(index, name, before);
  }

  /** The next main chunk this stream could give (undefined: none left). */
  peek(): ChunkRow | undefined {
    while (!this.next) {
      const r = this.it.next();
      if (r.done) return undefined;
      const row = r.value;
      if (isProtected(row, this.ranges)) continue;
      if (row.track === this.main) this.next = row;
      else if (row.start_ms < this.end) this.give(row);
      else this.held.push(row);
    }
    return this.next;
  }

  take(): void {
    const row = this.peek();
    if (!row) return;
    this.next = undefined;
    for (const h of this.held) this.give(h);
    this.held = [];
    this.give(row);
    this.seconds += row.duration;
    this.end = row.start_ms + row.duration * 1000;
  }

  /** Seconds still owed of the quota (negative: given beyond it). */
  get left(): number {
    return this.quota - this.seconds;
  }

  private give(row: ChunkRow): void {
    this.rows.push(row);
    this.freed += row.bytes;
  }
}

/**
 * Oldest-first trim in proportion to each stream's archive seconds (trimQuotas): a main-track
 * chunk goes while at least half of it fits what the stream still has to give; when that
 * frees less than `needBytes`, the stream owing most gives one more, and so on. What each
 * stream gave beyond or short of its share carries in `owed`, so over many passes no segment
 * length loses more than its share. At most `cutSec` seconds per stream, never chunks younger
 * than the stream's min hours or inside a protected range.
 */
export function chooseTrim(index: ArchiveIndex, streams: string[], o: TrimOptions): ChunkRow[] {
  const owed = o.owed ?? new Map<string, number>();
  const quotas = trimQuotas(o.needBytes, o.bytes, o.seconds, owed);
  const cuts: StreamCut[] = [];
  for (const s of streams) {
    const quota = quotas.get(s);
    if (quota === undefined) continue;
    const before = o.now - (o.minHours.get(s) ?? 0) * HOUR_MS;
    cuts.push(new StreamCut(index, s, quota, mainTrack(index, s), before, o.ranges));
  }
  const fits = (c: StreamCut, row: ChunkRow | undefined): row is ChunkRow =>
    !!row && c.seconds + row.duration <= o.cutSec;
  for (const c of cuts) {
    for (let row = c.peek(); fits(c, row) && c.left >= row.duration / 2; row = c.peek()) c.take();
  }
  let freed = 0;
  for (const c of cuts) freed += c.freed;
  while (freed < o.needBytes) {
    let best: StreamCut | undefined;
    for (const c of cuts) if (fits(c, c.peek()) && (!best || c.left > best.left)) best = c;
    if (!best) break;
    const before = best.freed;
    best.take();
    freed += best.freed - before;
  }
  const out: ChunkRow[] = [];
  for (const c of cuts) {
    out.push(...c.rows);
    // A stream that ran out of chunks it may give, or into the cut, owes nothing more: the
    // next pass measures the need anew.
    owed.set(c.name, fits(c, c.peek()) ? c.left : 0);
  }
  return out;
}
