// The recorder of one stream: watches the OTT packager's segment stores and writes every
// completed segment (HLS-TS chunks and CMAF fragments per rendition, with their init) to the
// storage, crash-safe: temp file → fsync → rename (one native thread-pool job) → index row.
import { createHash } from 'node:crypto';
import { access, mkdir } from 'node:fs/promises';
import { dirname, join } from 'node:path';
import type { Logger } from 'pino';
import { writeDurable } from '../native/fs.ts';
import type { CmafRendition, Packager } from '../ott/packager.ts';
import type { Release, SegmentDescriptor, SegmentStore } from '../ott/store.ts';
import type { MarkerKind, NewChunk } from './index-db.ts';
import { isSubtitleTrack, TS_TRACK } from './index-db.ts';
import { recorderClosed, recorderOpened } from './recorder-totals.ts';
import type { Attachment } from './storage.ts';

/** Chunks waiting for the disk beyond this are dropped (and counted): the disk is too slow. */
const MAX_BACKLOG = 64;
const HASH_CHARS = 16;

/** A stream name as one safe path component (no separators, no dots). */
export function safeName(s: string): string {
  return s.replace(/[^A-Za-z0-9_-]/g, (c) => `%${c.charCodeAt(0).toString(16).padStart(2, '0')}`);
}

function pad(n: number): string {
  return String(n).padStart(2, '0');
}

/** `<stream>/<YYYYMMDD>/<HH>/<track>-<start ms>-<name>`, relative to the storage directory. */
export function chunkPath(stream: string, track: string, startMs: number, name: string): string {
  const d = new Date(startMs);
  const day = `${d.getUTCFullYear()}${pad(d.getUTCMonth() + 1)}${pad(d.getUTCDate())}`;
  return join(safeName(stream), day, pad(d.getUTCHours()), `${track}-${startMs}-${name}`);
}

export function shortHash(data: Buffer | string): string {
  return createHash('sha1').update(data).digest('hex').slice(0, HASH_CHARS);
}

/** What a recorder writes through: a storage on this thread (./storage.ts), or in a stream
 *  worker the link to the main thread's storage (src/plane/storage-link.ts). */
export interface RecordingTarget {
  /** The storage's id (dvr-storage-list.storage[].id). */
  readonly id: number;
  readonly dir: string;
  /** Ready, its index open: chunks may be written. */
  readonly writable: boolean;
  /** The id of the init row (stream, track, hash), if the index has one. */
  initId(stream: string, track: string, hash: string): Promise<number | undefined>;
  addInit(
    stream: string,
    track: string,
    hash: string,
    path: string,
    layout: string,
  ): Promise<number>;
  commit(row: NewChunk): void;
  mark(stream: string, kind: MarkerKind, detail?: string): void;
  flush(): void;
  attach(stream: string, a: Attachment): void;
  detach(stream: string, a?: Attachment): void;
}

interface Job {
  track: string;
  desc: SegmentDescriptor;
  data: Buffer;
  init?: Buffer;
  layout: string;
  first: boolean;
  /** Gives `data` back to the store's pool once the write is done or dropped. */
  release: Release;
}

export interface RecorderStats {
  chunks: number;
  bytes: number;
  dropped: number;
  failed: number;
  lastWriteAt: number;
}

export class StreamRecorder {
  readonly stats: RecorderStats = { chunks: 0, bytes: 0, dropped: 0, failed: 0, lastWriteAt: 0 };
  private offs = new Map<SegmentStore, () => void>();
  private seen = new Map<SegmentStore, SegmentDescriptor | undefined>();
  private firstOf = new Set<string>();
  private queue: Job[] = [];
  private writing = false;
  private dirs = new Set<string>();
  private layoutHash = '';
  private closed = false;
  /** Scrambled PIDs last seen (comma list); undefined until the first report. */
  private scrambled?: string;
  private idle: Promise<void> = Promise.resolve();
  private idleResolve?: () => void;
  private sink = {
    boundary: () => this.watch(),
    tracks: () => this.watch(),
    splice: () => {},
  };

  constructor(
    readonly stream: string,
    private packager: Packager,
    readonly storage: RecordingTarget,
    private log: Logger,
  ) {
    packager.segmenter.addSink(this.sink);
    recorderOpened(this);
    this.watch();
    storage.mark(stream, 'source-start', 'recorder attached');
  }

  /** Subscribe to every store the packager has now (renditions come and go with the PMT). */
  private watch(): void {
    if (this.closed) return;
    const stores: [SegmentStore, string][] = [];
    if (this.packager.tsStore) stores.push([this.packager.tsStore, TS_TRACK]);
    for (const r of this.packager.renditions) stores.push([r.store, r.id]);
    // WebVTT renditions (`ott-webvtt`): `.vtt` beside the chunks, track `t<pid>p<page>`.
    for (const r of this.packager.vtt?.renditions ?? []) stores.push([r.store, r.id]);
    const live = new Set(stores.map(([s]) => s));
    for (const [s, off] of this.offs) {
      if (!live.has(s)) {
        off();
        this.offs.delete(s);
        this.seen.delete(s);
      }
    }
    for (const [store, track] of stores) {
      if (this.offs.has(store)) continue;
      this.seen.set(store, store.last());
      this.firstOf.add(track);
      const rendition = this.packager.renditions.find((r) => r.store === store);
      this.offs.set(
        store,
        store.onChange(() => this.onChange(store, track, rendition)),
      );
    }
  }

  private onChange(store: SegmentStore, track: string, r: CmafRendition | undefined): void {
    const last = store.last();
    if (!last || last === this.seen.get(store)) return;
    this.seen.set(store, last);
    const data = store.get(last.uri);
    if (!data) return;
    const first = this.firstOf.delete(track);
    this.enqueue({
      track,
      desc: last,
      data,
      init: r?.store.init,
      layout: this.layout(),
      first,
      release: store.retain(last.uri),
    });
  }

  private layout(): string {
    const vtt = this.packager.vtt?.renditions ?? [];
    const tracks = [...this.packager.segmenter.tracks.values()].map((t) => {
      // WebVTT renditions of this PID with their page's language (the PMT's teletext or
      // subtitling descriptor; the PID has no ISO 639 language of its own).
      const subs = vtt
        .filter((r) => r.pid === t.es.pid)
        .map((r) => ({ id: r.id, lang: r.language ?? '' }));
      return {
        pid: t.es.pid,
        type: t.type,
        codec: t.codec ?? '',
        lang: t.es.language ?? '',
        width: t.video?.width ?? 0,
        height: t.video?.height ?? 0,
        ...(subs.length > 0 ? { subs } : {}),
      };
    });
    const json = JSON.stringify(tracks);
    const h = shortHash(json);
    if (this.layoutHash && h !== this.layoutHash) this.storage.mark(this.stream, 'pmt-change');
    this.layoutHash = h;
    return json;
  }

  private enqueue(job: Job): void {
    const drop = this.closed || !this.storage.writable || this.queue.length >= MAX_BACKLOG;
    if (drop) {
      if (!this.closed) this.stats.dropped++;
      job.release();
      return;
    }
    this.queue.push(job);
    if (!this.writing) void this.drain();
  }

  private async drain(): Promise<void> {
    this.writing = true;
    this.idle = new Promise((r) => {
      this.idleResolve = r;
    });
    try {
      while (this.queue.length > 0) {
        const job = this.queue.shift()!;
        try {
          await this.write(job);
        } catch (err) {
          this.stats.failed++;
          // The directories known to exist may be gone (storage directory removed and put
          // back): make them again on the next write instead of failing every chunk.
          this.dirs.clear();
          this.log.warn({ err, stream: this.stream }, 'archive chunk not written');
        } finally {
          job.release();
        }
      }
    } finally {
      this.writing = false;
      this.idleResolve?.();
    }
  }

  private async ensureDir(full: string): Promise<void> {
    const d = dirname(full);
    if (this.dirs.has(d)) return;
    // Never recreate the storage directory itself: a removed or unmounted directory must
    // show up as a storage Error, not as a fresh empty directory on another disk.
    await access(this.storage.dir);
    await mkdir(d, { recursive: true });
    this.dirs.add(d);
    if (this.dirs.size > 64) this.dirs.clear();
  }

  private async write(job: Job): Promise<void> {
    const s = this.storage;
    if (!s.writable) {
      this.stats.dropped++;
      return;
    }
    const d = job.desc;
    const initId = await this.initFor(job);
    const vtt = isSubtitleTrack(job.track);
    const name = job.track === TS_TRACK ? d.uri : `${shortHash(job.data)}.${vtt ? 'vtt' : 'm4s'}`;
    const rel = chunkPath(this.stream, job.track, d.wallclock, name);
    const full = join(s.dir, rel);
    await this.ensureDir(full);
    await writeDurable(full, job.data);
    s.commit({
      stream: this.stream,
      track: job.track,
      start_ms: d.wallclock,
      duration: d.duration,
      bytes: job.data.length,
      path: rel,
      uri: job.track === TS_TRACK ? d.uri : name,
      disc: d.discontinuity || job.first ? 1 : 0,
      media_start: d.start,
      timescale: d.timescale,
      init_id: initId,
    });
    if (vtt && job.first) s.mark(this.stream, 'subtitles', `subtitle track ${job.track} recorded`);
    this.stats.chunks++;
    this.stats.bytes += job.data.length;
    this.stats.lastWriteAt = Date.now();
  }

  /** The init row of a chunk: CMAF init bytes on disk, or the track layout alone for TS. */
  private async initFor(job: Job): Promise<number> {
    const s = this.storage;
    const body = job.init ?? Buffer.from(job.layout);
    const hash = shortHash(body);
    const known = await s.initId(this.stream, job.track, hash);
    if (known !== undefined) return known;
    let rel = '';
    if (job.init) {
      rel = chunkPath(this.stream, job.track, job.desc.wallclock, `init-${hash}.mp4`);
      const full = join(s.dir, rel);
      await this.ensureDir(full);
      await writeDurable(full, job.init);
    }
    return (
      (await s.initId(this.stream, job.track, hash)) ??
      (await s.addInit(this.stream, job.track, hash, rel, job.layout))
    );
  }

  /** The scrambled PIDs of the active input changed (a `scrambling` marker when they do). */
  scrambling(pids: number[]): void {
    const now = [...pids].sort((a, b) => a - b).join(',');
    if (now === this.scrambled) return;
    const first = this.scrambled === undefined;
    this.scrambled = now;
    if (first && now === '') return;
    this.storage.mark(
      this.stream,
      'scrambling',
      now ? `scrambled PIDs: ${now}` : 'clear: no scrambled PID',
    );
  }

  /** Wait until the queued chunks are on disk and indexed (tests, shutdown). */
  async settle(): Promise<void> {
    await this.idle;
    this.storage.flush();
  }

  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    this.packager.segmenter.removeSink(this.sink);
    for (const off of this.offs.values()) off();
    this.offs.clear();
    await this.idle;
    recorderClosed(this);
    this.storage.flush();
    this.storage.mark(this.stream, 'source-stop', 'recorder detached');
  }
}
