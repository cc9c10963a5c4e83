// Fast closed VOD media playlists over long windows: the archive is rendered in blocks of one
// hour of chunk starts per (stream, track); a window joins the cached blocks it covers whole
// and renders only its two partial edges. A block is dropped when a chunk inside it is added
// or removed, so the text is always what vodPlaylist() would give for the same rows.
import { HLS_VERSION_ARCHIVE, quote, targetDurationOf } from '../ott/hls.ts';
import type { StoredPart } from './block-store.ts';
import { isSubtitleTrack, type LeanChunk, TS_TRACK } from './index-db.ts';
import { GAP_TOLERANCE_MS, PLAYLIST_BLOCK_MS } from './settings.ts';

/** Chunk starts per cached block. An hour keeps a live stream's churn to one block. */
export const BLOCK_MS = PLAYLIST_BLOCK_MS;
/** Cached text per storage at most (UTF-16 code units ≈ bytes for this ASCII text). */
export const BLOCK_CACHE_CHARS = 64 * 1024 * 1024;

/** The rows a block or an edge needs from the index. */
export type RangeFn = (stream: string, track: string, from: number, to: number) => LeanChunk[];
/** First and last chunk start of a track (undefined when it has none). */
export type ExtentFn = (
  stream: string,
  track: string,
) => { first: number; last: number } | undefined;

/** One rendered run of rows. `head` is the first row's entry without its prefix (which
 *  depends on the row before it, known only when parts are joined). */
interface Part {
  first: LeanChunk;
  last: LeanChunk;
  head: string;
  /** Entries of the 2nd..nth rows, each with its prefix, joined by newlines ('' if none). */
  tail: string;
  maxDuration: number;
  count: number;
}

/** Where closed blocks are kept beyond this process (the index database). */
export interface BlockPersistence {
  get(stream: string, track: string, block: number): StoredPart | null | undefined;
  put(stream: string, track: string, block: number, part: StoredPart | undefined): void;
}

export interface PlaylistText {
  text: string;
  count: number;
}

function uriOf(track: string, r: LeanChunk): string {
  if (track === TS_TRACK) return r.uri;
  return `dvr-i${r.init_id}/${r.id}.${isSubtitleTrack(track) ? 'vtt' : 'm4s'}`;
}

function breaks(prev: LeanChunk, row: LeanChunk): boolean {
  if (row.disc === 1 || row.init_id !== prev.init_id) return true;
  return row.start_ms - (prev.start_ms + prev.duration * 1000) > GAP_TOLERANCE_MS;
}

/** Lines that go before `row`: discontinuity, init map (fMP4), date-time; '' when none. */
function prefix(track: string, prev: LeanChunk | undefined, row: LeanChunk): string {
  const broken = prev !== undefined && breaks(prev, row);
  let out = broken ? '#EXT-X-DISCONTINUITY\n' : '';
  if (track !== TS_TRACK && !isSubtitleTrack(track) && (!prev || row.init_id !== prev.init_id))
    out += `#EXT-X-MAP:URI=${quote(`dvr-i${row.init_id}/init.mp4`)}\n`;
  if (!prev || broken) out += `#EXT-X-PROGRAM-DATE-TIME:${new Date(row.start_ms).toISOString()}\n`;
  return out;
}

function entry(track: string, r: LeanChunk): string {
  return `#EXTINF:${r.duration.toFixed(3)},\n${uriOf(track, r)}`;
}

function render(track: string, rows: LeanChunk[]): Part | undefined {
  const first = rows[0];
  if (!first) return undefined;
  const lines: string[] = [];
  let max = first.duration;
  for (let i = 1; i < rows.length; i++) {
    const r = rows[i]!;
    if (r.duration > max) max = r.duration;
    lines.push(prefix(track, rows[i - 1], r) + entry(track, r));
  }
  return {
    first,
    last: rows[rows.length - 1]!,
    head: entry(track, first),
    tail: lines.join('\n'),
    maxDuration: max,
    count: rows.length,
  };
}

function size(p: Part): number {
  return p.head.length + p.tail.length;
}

export class PlaylistBlocks {
  private cache = new Map<string, Part | null>();
  private chars = 0;

  /** `persist` (optional) keeps closed blocks — hours with a later chunk — across requests
   *  and restarts; the in-memory LRU stays in front of it. */
  constructor(
    private range: RangeFn,
    private extent: ExtentFn,
    private limitChars = BLOCK_CACHE_CHARS,
    private persist?: () => BlockPersistence | undefined,
  ) {}

  private key(stream: string, track: string, block: number): string {
    return `${stream}\u0000${track}\u0000${block}`;
  }

  /** A chunk starting at `startMs` was added or removed. */
  invalidate(stream: string, track: string, startMs: number): void {
    this.drop(this.key(stream, track, Math.floor(startMs / BLOCK_MS) * BLOCK_MS));
  }

  clear(): void {
    this.cache.clear();
    this.chars = 0;
  }

  private drop(key: string): void {
    const p = this.cache.get(key);
    if (p === undefined) return;
    if (p) this.chars -= size(p);
    this.cache.delete(key);
  }

  private block(stream: string, track: string, block: number, closed: boolean): Part | undefined {
    const key = this.key(stream, track, block);
    const hit = this.cache.get(key);
    if (hit !== undefined) {
      // Most recently used goes last (Map order is the eviction order).
      this.cache.delete(key);
      this.cache.set(key, hit);
      return hit ?? undefined;
    }
    const store = closed ? this.persist?.() : undefined;
    const stored = store?.get(stream, track, block);
    let part: Part | undefined;
    if (stored !== undefined) part = stored ?? undefined;
    else {
      part = render(track, this.range(stream, track, block, block + BLOCK_MS));
      store?.put(stream, track, block, part);
    }
    this.cache.set(key, part ?? null);
    if (part) this.chars += size(part);
    for (const [k] of this.cache) {
      if (this.chars <= this.limitChars) break;
      this.drop(k);
    }
    return part;
  }

  /** Render and keep the block of `startMs` now (the recorder moved past it: it is closed),
   *  so the first request that covers it finds it ready. */
  warm(stream: string, track: string, startMs: number): void {
    this.block(stream, track, Math.floor(startMs / BLOCK_MS) * BLOCK_MS, true);
  }

  /** The closed VOD playlist of the chunks starting in [from, to) (spec 3 rule 4). */
  playlist(
    stream: string,
    track: string,
    from: number,
    to: number,
    fallbackTarget: number,
  ): PlaylistText {
    const parts: Part[] = [];
    const ext = to > from ? this.extent(stream, track) : undefined;
    if (ext) {
      // Only the blocks the track has chunks in (a window may be "0 to forever").
      const end = Math.min(to, ext.last + 1);
      const start = Math.floor(Math.max(from, ext.first) / BLOCK_MS) * BLOCK_MS;
      for (let b = start; b < end; b += BLOCK_MS) {
        const whole = b >= from && b + BLOCK_MS <= to;
        const p = whole
          ? this.block(stream, track, b, ext.last >= b + BLOCK_MS)
          : render(track, this.range(stream, track, Math.max(from, b), Math.min(to, b + BLOCK_MS)));
        if (p) parts.push(p);
      }
    }
    let max = 0;
    let count = 0;
    for (const p of parts) {
      if (p.maxDuration > max) max = p.maxDuration;
      count += p.count;
    }
    const out = [
      '#EXTM3U',
      `#EXT-X-VERSION:${HLS_VERSION_ARCHIVE}`,
      `#EXT-X-TARGETDURATION:${targetDurationOf(max || fallbackTarget)}`,
      '#EXT-X-PLAYLIST-TYPE:VOD',
      '#EXT-X-MEDIA-SEQUENCE:0',
      '#EXT-X-INDEPENDENT-SEGMENTS',
    ];
    let prev: LeanChunk | undefined;
    for (const p of parts) {
      out.push(prefix(track, prev, p.first) + p.head);
      if (p.tail) out.push(p.tail);
      prev = p.last;
    }
    out.push('#EXT-X-ENDLIST');
    return { text: `${out.join('\n')}\n`, count };
  }
}
