// Segment store of one rendition: the live ring of segment descriptors (with their parts for
// LL-HLS) and the bytes they point to. Playlist builders take descriptor lists, never the
// ring itself, so the archive can hand them a past interval read from disk instead.

export interface PartDescriptor {
  /** Index of the part inside its segment. */
  index: number;
  duration: number;
  independent: boolean;
  uri: string;
  size: number;
}

export interface SegmentDescriptor {
  seq: number;
  discSeq: number;
  /** First segment after a splice. */
  discontinuity: boolean;
  /** Media time of the first sample, in `timescale` units (tfdt for CMAF). */
  start: number;
  timescale: number;
  /** Seconds. */
  duration: number;
  /** Wall clock (ms since the epoch) of the first sample: EXT-X-PROGRAM-DATE-TIME. */
  wallclock: number;
  uri: string;
  size: number;
  parts: PartDescriptor[];
  /** fMP4: the init segment's URI for this segment (`init.mp4`, `init-1.mp4` after the picture
   *  parameters changed); absent = `init.mp4`. */
  map?: string;
}

/** A segment still being written (LL-HLS shows its parts before it is complete). */
export interface OpenSegment {
  seq: number;
  discSeq: number;
  discontinuity: boolean;
  start: number;
  wallclock: number;
  parts: PartDescriptor[];
  map?: string;
}

export interface StoreOptions {
  /** Segments listed in the live playlist. */
  window: number;
  /** Extra segments kept after they leave the playlist, for clients still fetching them. */
  grace: number;
}

export type StoreListener = () => void;

/** A holder's release of a segment's bytes (see ./pool.ts). */
export type Release = () => void;

const NO_RELEASE: Release = () => {};

/** A pooled block's lease as the store sees it (./pool.ts). */
interface PooledLease {
  retain(): Release;
}

export class SegmentStore {
  private segments: SegmentDescriptor[] = [];
  private blobs = new Map<string, Buffer>();
  /** Blobs whose memory is pooled: their lease, and the store's own hold on it. */
  private pooled = new Map<string, { lease: PooledLease; release: Release }>();
  private listeners = new Set<StoreListener>();
  open?: OpenSegment;
  /** The current init segment (CMAF); `initUri` names it. Earlier inits stay addressable by
   *  their URI while segments in the store use them. */
  init?: Buffer;
  initUri = 'init.mp4';
  /** Bumped on every change: part of the key of cached renderings (playlists). */
  version = 0;
  private longestAt = -1;
  private longestValue = 0;
  /** Media time (timescale units) where each discontinuity run began: DASH Period origins. */
  readonly periodOrigins = new Map<number, number>();

  constructor(private opts: StoreOptions) {}

  setWindow(window: number): void {
    this.opts.window = window;
    this.trim();
    this.version++;
  }

  get window(): number {
    return this.opts.window;
  }

  /** Segments in the live window, oldest first (a copy: callers may keep it). */
  live(): SegmentDescriptor[] {
    return this.segments.slice(-this.opts.window);
  }

  /** Every segment still held, including the grace ones. */
  all(): SegmentDescriptor[] {
    return this.segments.slice();
  }

  last(): SegmentDescriptor | undefined {
    return this.segments[this.segments.length - 1];
  }

  /** Bytes of the media held: every segment still in the store (grace included) and the
   *  parts of the open one (a segment's parts share its bytes). Init segments not counted. */
  heldBytes(): number {
    let n = 0;
    for (const s of this.segments) n += s.size;
    for (const p of this.open?.parts ?? []) n += p.size;
    return n;
  }

  get(uri: string): Buffer | undefined {
    return this.blobs.get(uri);
  }

  /**
   * Keep the bytes of `uri` valid past this call (an HTTP response, a disk write): pooled
   * memory is reused only after every such holder called the returned release once.
   */
  retain(uri: string): Release {
    return this.pooled.get(uri)?.lease.retain() ?? NO_RELEASE;
  }

  /** Set the init segment under `uri` (a new one after a parameter change). */
  setInit(uri: string, data: Buffer): void {
    this.init = data;
    this.initUri = uri;
    this.blobs.set(uri, data);
  }

  /** Start a new open segment (parts will be added to it). */
  begin(seg: OpenSegment): void {
    this.open = seg;
    if (!this.periodOrigins.has(seg.discSeq)) this.periodOrigins.set(seg.discSeq, seg.start);
    this.notify();
  }

  /** Add a part to the open segment; with `lease` (pooled memory) the store holds a reference
   *  until the part's segment leaves it. */
  addPart(part: PartDescriptor, data: Buffer, lease?: PooledLease): void {
    if (!this.open) return;
    this.blobs.set(part.uri, data);
    if (lease) this.pooled.set(part.uri, { lease, release: lease.retain() });
    this.open.parts.push(part);
    this.notify();
  }

  /**
   * Close a segment: its bytes become addressable by `seg.uri`. With `lease` (pooled memory)
   * the store holds a reference until the segment leaves it.
   */
  commit(seg: SegmentDescriptor, data: Buffer, lease?: PooledLease): void {
    if (!this.periodOrigins.has(seg.discSeq)) this.periodOrigins.set(seg.discSeq, seg.start);
    this.drop(seg.uri);
    this.blobs.set(seg.uri, data);
    if (lease) this.pooled.set(seg.uri, { lease, release: lease.retain() });
    this.segments.push(seg);
    if (this.open?.seq === seg.seq) this.open = undefined;
    this.trim();
    this.notify();
  }

  /** Longest segment in the live window in seconds, 0 when empty (the stream's target
   *  duration is taken over every store: Packager.targetDuration). */
  longest(): number {
    if (this.longestAt !== this.version) {
      let max = 0;
      for (const s of this.live()) max = Math.max(max, s.duration);
      this.longestAt = this.version;
      this.longestValue = max;
    }
    return this.longestValue;
  }

  onChange(fn: StoreListener): () => void {
    this.listeners.add(fn);
    return () => this.listeners.delete(fn);
  }

  clear(): void {
    this.segments = [];
    for (const uri of [...this.pooled.keys()]) this.drop(uri);
    this.blobs.clear();
    this.open = undefined;
    this.notify();
  }

  private trim(): void {
    const keep = this.opts.window + this.opts.grace;
    while (this.segments.length > keep) {
      const old = this.segments.shift()!;
      this.drop(old.uri);
      this.blobs.delete(old.uri);
      for (const p of old.parts) {
        this.drop(p.uri);
        this.blobs.delete(p.uri);
      }
    }
    // Inits no segment uses any more (older than the oldest held) are dropped.
    const maps = new Set(this.segments.map((x) => x.map ?? 'init.mp4'));
    maps.add(this.initUri);
    for (const uri of this.blobs.keys())
      if (uri.startsWith('init') && uri.endsWith('.mp4') && !maps.has(uri)) this.blobs.delete(uri);
    const oldest = this.segments[0]?.discSeq;
    if (oldest !== undefined)
      for (const d of this.periodOrigins.keys()) if (d < oldest) this.periodOrigins.delete(d);
  }

  /** Let go of a pooled blob (readers holding it keep it until they release). */
  private drop(uri: string): void {
    const p = this.pooled.get(uri);
    if (!p) return;
    this.pooled.delete(uri);
    p.release();
  }

  private notify(): void {
    this.version++;
    for (const fn of [...this.listeners]) fn();
  }
}
