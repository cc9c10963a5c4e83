// The archive index of one storage: a SQLite database (WAL) inside the storage directory that
// lists every chunk on disk (stream, track, wall-clock start, duration, bytes, path,
// discontinuity, init/track layout) plus event markers for /data/dvrstat.
import Database from 'better-sqlite3';
import { BlockStore } from './block-store.ts';
import { PLAYLIST_BLOCK_MS } from './settings.ts';

type Db = Database.Database;
type Stmt = Database.Statement;

export const INDEX_FILE = 'sluice-dvr.sqlite';

/** Track id of the HLS-TS chunks; CMAF renditions use their OTT id (`c256`). */
export const TS_TRACK = 'ts';

/** WebVTT tracks are `t<pid>p<page>` (OTT teletext subtitles): never a stream's main track. */
export function isSubtitleTrack(track: string): boolean {
  return /^t\d+p[0-9a-f]+$/.test(track);
}

/**
 * The language of archived track `track` from its PID's entry in a chunk's layout: a WebVTT
 * track's own (`subs`: teletext page or DVB subtitle page languages, several on one PID), else
 * the PID's (ISO 639 descriptor).
 */
export function layoutLang(entry: Record<string, unknown> | undefined, track: string): string {
  const subs = entry?.['subs'] as { id: string; lang: string }[] | undefined;
  const own = subs?.find((x) => x.id === track)?.lang;
  return String(own || (entry?.['lang'] ?? ''));
}

const SCHEMA = `
CREATE TABLE IF NOT EXISTS init (
  id INTEGER PRIMARY KEY,
  stream TEXT NOT NULL,
  track TEXT NOT NULL,
  hash TEXT NOT NULL,
  path TEXT NOT NULL,
  layout TEXT NOT NULL,
  UNIQUE (stream, track, hash)
);
CREATE TABLE IF NOT EXISTS chunk (
  id INTEGER PRIMARY KEY,
  stream TEXT NOT NULL,
  track TEXT NOT NULL,
  start_ms INTEGER NOT NULL,
  duration REAL NOT NULL,
  bytes INTEGER NOT NULL,
  path TEXT NOT NULL UNIQUE,
  uri TEXT NOT NULL,
  disc INTEGER NOT NULL,
  media_start INTEGER NOT NULL,
  timescale INTEGER NOT NULL,
  init_id INTEGER NOT NULL
);
-- Covers the playlist query (no table lookups for 43,200 rows of a day); replaces the plain
-- (stream, track, start_ms) index of earlier versions.
CREATE INDEX IF NOT EXISTS chunk_cover ON chunk (stream, track, start_ms, id, duration, disc, init_id, uri);
DROP INDEX IF EXISTS chunk_stream_start;
CREATE INDEX IF NOT EXISTS chunk_uri ON chunk (stream, uri);
CREATE INDEX IF NOT EXISTS chunk_start ON chunk (start_ms);
CREATE TABLE IF NOT EXISTS marker (
  stream TEXT NOT NULL,
  at_ms INTEGER NOT NULL,
  kind TEXT NOT NULL,
  detail TEXT NOT NULL DEFAULT ''
);
CREATE INDEX IF NOT EXISTS marker_at ON marker (at_ms);
`;

export interface ChunkRow {
  id: number;
  stream: string;
  track: string;
  start_ms: number;
  duration: number;
  bytes: number;
  path: string;
  uri: string;
  disc: number;
  media_start: number;
  timescale: number;
  init_id: number;
}

export type NewChunk = Omit<ChunkRow, 'id'>;

/** The columns a playlist needs (read from the covering index alone). */
export type LeanChunk = Pick<ChunkRow, 'id' | 'start_ms' | 'duration' | 'disc' | 'init_id' | 'uri'>;

export interface Cursor {
  start: number;
  id: number;
}

export const CURSOR_START: Cursor = { start: -1, id: 0 };

export interface InitRow {
  id: number;
  stream: string;
  track: string;
  hash: string;
  path: string;
  /** JSON track layout (codec, pid, type, language, dimensions; WebVTT tracks' languages). */
  layout: string;
}

export interface StreamTotals {
  stream: string;
  bytes: number;
  /** Seconds of the stream's main track (TS, else its largest track). */
  seconds: number;
  first: number;
  last: number;
  chunks: number;
}

/** Sums of one track of one stream. */
export interface TrackTotals extends StreamTotals {
  track: string;
}

/** Per stream: bytes of every track; seconds, span and count of its main track (TS, else
 *  the track with the most seconds). */
export function mainTotals(rows: Iterable<TrackTotals>): Map<string, StreamTotals> {
  const out = new Map<string, StreamTotals & { track: string }>();
  for (const r of rows) {
    const prev = out.get(r.stream);
    if (!prev) {
      out.set(r.stream, { ...r });
      continue;
    }
    prev.bytes += r.bytes;
    // Subtitle tracks count bytes only, unless the stream has nothing else.
    if (isSubtitleTrack(r.track) && !isSubtitleTrack(prev.track)) continue;
    const better =
      r.track === TS_TRACK ||
      isSubtitleTrack(prev.track) ||
      (prev.track !== TS_TRACK && r.seconds > prev.seconds);
    if (better) {
      prev.track = r.track;
      prev.seconds = r.seconds;
      prev.first = r.first;
      prev.last = r.last;
      prev.chunks = r.chunks;
    }
  }
  return new Map([...out].map(([k, { track: _t, ...v }]) => [k, v]));
}

export type MarkerKind =
  | 'source-start'
  | 'source-stop'
  | 'pmt-change'
  | 'scrambling'
  | 'index-rebuild'
  | 'cleanup'
  | 'subtitles';

export interface MarkerRow {
  stream: string;
  at_ms: number;
  kind: MarkerKind;
  detail: string;
}

export class ArchiveIndex {
  readonly db: Db;
  /** Rendered playlist blocks kept beside the chunks (dropped by triggers on change). */
  readonly blocks: BlockStore;
  private s: Record<string, Stmt>;

  constructor(readonly file: string) {
    this.db = new Database(file);
    this.db.pragma('journal_mode = WAL');
    // WAL + NORMAL: a committed transaction survives a process crash (kill -9); a power cut
    // may lose the last transactions, which then show up as orphan files and are collected.
    this.db.pragma('synchronous = NORMAL');
    this.db.exec(SCHEMA);
    this.blocks = new BlockStore(this.db, PLAYLIST_BLOCK_MS);
    const p = (sql: string) => this.db.prepare(sql);
    this.s = {
      insert: p(
        `INSERT OR IGNORE INTO chunk (stream, track, start_ms, duration, bytes, path, uri, disc, media_start, timescale, init_id)
         VALUES (@stream, @track, @start_ms, @duration, @bytes, @path, @uri, @disc, @media_start, @timescale, @init_id)`,
      ),
      range: p(
        `SELECT * FROM chunk WHERE stream = ? AND track = ? AND start_ms >= ? AND start_ms < ? ORDER BY start_ms, id`,
      ),
      lean: p(
        `SELECT id, start_ms, duration, disc, init_id, uri FROM chunk
         WHERE stream = ? AND track = ? AND start_ms >= ? AND start_ms < ? ORDER BY start_ms, id`,
      ),
      first: p(`SELECT MIN(start_ms) AS v FROM chunk WHERE stream = ? AND track = ?`),
      last: p(`SELECT MAX(start_ms) AS v FROM chunk WHERE stream = ? AND track = ?`),
      lastEnd: p(
        `SELECT start_ms + duration * 1000 AS v FROM chunk WHERE stream = ? AND track = ?
         ORDER BY start_ms DESC LIMIT 1`,
      ),
      byUri: p(`SELECT * FROM chunk WHERE stream = ? AND uri = ? LIMIT 1`),
      byId: p(`SELECT * FROM chunk WHERE id = ?`),
      byPath: p(
        `SELECT 1 AS x FROM chunk WHERE path = ? UNION ALL SELECT 1 FROM init WHERE path = ? LIMIT 1`,
      ),
      oldest: p(
        `SELECT * FROM chunk WHERE stream = ? AND (start_ms, id) > (?, ?) AND start_ms < ?
         ORDER BY start_ms, id LIMIT ?`,
      ),
      del: p(`DELETE FROM chunk WHERE id = ?`),
      tracks: p(`SELECT DISTINCT track FROM chunk WHERE stream = ?`),
      hasIn: p(
        `SELECT 1 AS x FROM chunk WHERE stream = ? AND track = ? AND start_ms >= ? AND start_ms < ? LIMIT 1`,
      ),
      rate: p(
        `SELECT COALESCE(SUM(bytes), 0) AS bytes, COALESCE(SUM(duration), 0) AS seconds,
                COALESCE(MAX(bytes * 8.0 / duration), 0) AS peak
         FROM chunk WHERE stream = ? AND track = ? AND start_ms >= ? AND start_ms < ? AND duration > 0`,
      ),
      streamTracks: p(`SELECT DISTINCT stream, track FROM chunk`),
      newest: p(
        `SELECT * FROM chunk WHERE stream = ? AND track = ? ORDER BY start_ms DESC, id DESC LIMIT ?`,
      ),
      totals: p(
        `SELECT stream, track, SUM(bytes) AS bytes, SUM(duration) AS seconds, MIN(start_ms) AS first,
                MAX(start_ms + duration * 1000) AS last, COUNT(*) AS chunks
         FROM chunk GROUP BY stream, track`,
      ),
      streams: p(`SELECT DISTINCT stream FROM chunk`),
      initGet: p(`SELECT * FROM init WHERE stream = ? AND track = ? AND hash = ?`),
      initById: p(`SELECT * FROM init WHERE id = ?`),
      initInsert: p(`INSERT INTO init (stream, track, hash, path, layout) VALUES (?, ?, ?, ?, ?)`),
      initUnused: p(
        `SELECT * FROM init i WHERE NOT EXISTS (SELECT 1 FROM chunk c WHERE c.init_id = i.id)`,
      ),
      initDel: p(`DELETE FROM init WHERE id = ?`),
      marker: p(`INSERT INTO marker (stream, at_ms, kind, detail) VALUES (?, ?, ?, ?)`),
      markers: p(
        `SELECT * FROM marker WHERE at_ms >= ? AND at_ms < ? AND (? = '' OR stream = ?) ORDER BY at_ms`,
      ),
      markerTrim: p(`DELETE FROM marker WHERE at_ms < ?`),
      fill: p(
        `SELECT stream, track, CAST((start_ms - @from) / @step AS INTEGER) AS bucket, SUM(duration) AS seconds, SUM(bytes) AS bytes
         FROM chunk WHERE start_ms >= @from AND start_ms < @to AND (@stream = '' OR stream = @stream)
         GROUP BY stream, track, bucket ORDER BY stream, track, bucket`,
      ),
    };
  }

  /** Insert chunks in one transaction (their files are already renamed into place). Ids
   *  are 0 for rows ignored as already indexed (same path). */
  readonly insertMany = (rows: NewChunk[]): number[] => {
    const ids: number[] = [];
    this.db.transaction(() => {
      for (const r of rows) {
        const info = this.s.insert!.run(r);
        ids.push(info.changes > 0 ? Number(info.lastInsertRowid) : 0);
      }
    })();
    return ids;
  };

  range(stream: string, track: string, from: number, to: number): ChunkRow[] {
    return this.s.range!.all(stream, track, from, to) as ChunkRow[];
  }

  /** The playlist columns of `range()`. */
  lean(stream: string, track: string, from: number, to: number): LeanChunk[] {
    return this.s.lean!.all(stream, track, from, to) as LeanChunk[];
  }

  firstStart(stream: string, track: string): number | undefined {
    const v = (this.s.first!.get(stream, track) as { v: number | null }).v;
    return v ?? undefined;
  }

  /** First and last chunk start of a track. */
  extent(stream: string, track: string): { first: number; last: number } | undefined {
    const first = this.firstStart(stream, track);
    if (first === undefined) return undefined;
    const last = (this.s.last!.get(stream, track) as { v: number }).v;
    return { first, last };
  }

  byUri(stream: string, uri: string): ChunkRow | undefined {
    return this.s.byUri!.get(stream, uri) as ChunkRow | undefined;
  }

  byId(id: number): ChunkRow | undefined {
    return this.s.byId!.get(id) as ChunkRow | undefined;
  }

  knowsPath(rel: string): boolean {
    return this.s.byPath!.get(rel, rel) !== undefined;
  }

  /** Chunks of a stream (every track) after the cursor row (start, id) and starting before
   *  `before`, oldest first: pages through the archive without skipping equal starts. */
  oldest(stream: string, after: Cursor, before: number, limit: number): ChunkRow[] {
    return this.s.oldest!.all(stream, after.start, after.id, before, limit) as ChunkRow[];
  }

  deleteMany(ids: number[]): void {
    this.db.transaction(() => {
      for (const id of ids) this.s.del!.run(id);
    })();
  }

  tracks(stream: string): string[] {
    return (this.s.tracks!.all(stream) as { track: string }[]).map((r) => r.track);
  }

  /** Whether a track has a chunk starting in [from, to). */
  hasIn(stream: string, track: string, from: number, to: number): boolean {
    return this.s.hasIn!.get(stream, track, from, to) !== undefined;
  }

  /** Average and peak bit rate of a track's chunks starting in [from, to). */
  rate(stream: string, track: string, from: number, to: number): { average: number; peak: number } {
    const r = this.s.rate!.get(stream, track, from, to) as {
      bytes: number;
      seconds: number;
      peak: number;
    };
    return { average: r.seconds > 0 ? (r.bytes * 8) / r.seconds : 0, peak: r.peak };
  }

  streamTracks(): { stream: string; track: string }[] {
    return this.s.streamTracks!.all() as { stream: string; track: string }[];
  }

  /** The newest chunks of a track, newest first. */
  newest(stream: string, track: string, limit: number): ChunkRow[] {
    return this.s.newest!.all(stream, track, limit) as ChunkRow[];
  }

  streams(): string[] {
    return (this.s.streams!.all() as { stream: string }[]).map((r) => r.stream);
  }

  /** Sums per stream and track (one full pass over the index: used at open only). */
  trackTotals(): TrackTotals[] {
    return this.s.totals!.all() as TrackTotals[];
  }

  /** First start and last end of a track, or undefined when it has no chunk. */
  span(stream: string, track: string): { first: number; last: number } | undefined {
    const first = this.firstStart(stream, track);
    if (first === undefined) return undefined;
    return { first, last: (this.s.lastEnd!.get(stream, track) as { v: number }).v };
  }

  /** Bytes of every track, seconds and span of the main track, per stream (a full pass). */
  totals(): Map<string, StreamTotals> {
    return mainTotals(this.trackTotals());
  }

  init(stream: string, track: string, hash: string): InitRow | undefined {
    return this.s.initGet!.get(stream, track, hash) as InitRow | undefined;
  }

  initById(id: number): InitRow | undefined {
    return this.s.initById!.get(id) as InitRow | undefined;
  }

  addInit(stream: string, track: string, hash: string, path: string, layout: string): number {
    return Number(this.s.initInsert!.run(stream, track, hash, path, layout).lastInsertRowid);
  }

  /** Init rows no chunk refers to any more (removed after their chunks). */
  unusedInits(): InitRow[] {
    return this.s.initUnused!.all() as InitRow[];
  }

  deleteInit(id: number): void {
    this.s.initDel!.run(id);
  }

  mark(stream: string, atMs: number, kind: MarkerKind, detail = ''): void {
    this.s.marker!.run(stream, atMs, kind, detail);
  }

  markers(from: number, to: number, stream = ''): MarkerRow[] {
    return this.s.markers!.all(from, to, stream, stream) as MarkerRow[];
  }

  trimMarkers(before: number): void {
    this.s.markerTrim!.run(before);
  }

  /** Seconds and bytes recorded per stream and bucket of `step` ms in [from, to). */
  fill(
    from: number,
    to: number,
    step: number,
    stream = '',
  ): { stream: string; track: string; bucket: number; seconds: number; bytes: number }[] {
    return this.s.fill!.all({ from, to, step, stream }) as {
      stream: string;
      track: string;
      bucket: number;
      seconds: number;
      bytes: number;
    }[];
  }

  close(): void {
    if (this.db.open) this.db.close();
  }
}
