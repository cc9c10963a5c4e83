// Reusable blocks for segment bytes, each a mapping of its own (src/native/pages.ts): room
// reserved for more than a segment will likely hold, memory only where it is written, and
// `trim()` hands the pages past a finished segment's end back to the OS at once, so a block
// costs its segment rounded up to a page, whatever it held before.
//
// Why blocks are pooled at all: a fresh multi-megabyte Buffer per segment costs page faults on
// first touch and, at 100 channels, drove V8's external-memory heuristic into a mark-compact
// every second or two (bench/RESULTS.md, whole box). Why a madvise trim: a reused size-class
// block kept every page its largest earlier segment had touched; a resizable ArrayBuffer's
// shrink cost 2.9 ms per 2 MB segment and asked V8 for a full collection, a right-sized copy at
// completion 1.5–2.2 ms, madvise a few µs (bench/RESULTS.md, memory).
//
// Ownership is counted, never guessed: whoever keeps a block's bytes past the current
// synchronous call (the writer filling it, the segment store, an HTTP response in flight, the
// archive recorder's write) holds a reference from `retain()` and gives it back exactly once.

import { discardPages, mapBlock } from '../native/pages.ts';

/** Reservations are sized in steps of this many bytes (few size classes, little waste). */
const GRANULE = 64 * 1024;
/** Size classes: each power of two split in eight steps. */
const STEPS_PER_OCTAVE = 8;
/** A free block reserving up to this many times the asked reservation may serve a request. */
const MAX_OVERSIZE = 2;
/** The fill rate that bounds the free pool is taken over this long (several segments of every
 *  stream, so one stream's boundary does not swing it). */
const RATE_WINDOW_MS = 10_000;

const PAGE = 4096;

/** A block: its memory, and how much of it may be resident. */
class Block {
  readonly buf: Buffer;
  /** Bytes from the start that may be in memory: the whole block until a trim says less. */
  extent: number;

  constructor(reserve: number) {
    this.buf = mapBlock(reserve);
    this.extent = reserve;
  }

  /** The pages from `bytes` on go back to the OS (views before it stay as they are). */
  keep(bytes: number): void {
    discardPages(this.buf, bytes);
    this.extent = Math.min(this.buf.length, Math.ceil(bytes / PAGE) * PAGE);
  }
}

/** One block and its holder count. `buf` is the whole block; holders use views of it. */
export class Lease {
  private refs = 1;

  constructor(
    private readonly block: Block,
    private readonly pool?: BlockPool,
  ) {}

  get buf(): Buffer {
    return this.block.buf;
  }

  /** The contents end at `bytes`: the whole pages past it go back to the OS now (they read
   *  as zero after). Views inside the first `bytes` are untouched. */
  trim(bytes: number): void {
    if (this.refs <= 0) throw new Error('trim of a released block');
    const keep = Math.min(this.block.buf.length, Math.max(0, Math.ceil(bytes)));
    this.block.keep(keep);
    this.pool?.filled(keep);
  }

  /** A new holder. Returns its release function, which acts once however often it is called. */
  retain(): () => void {
    if (this.refs <= 0) throw new Error('retain of a released block');
    this.refs++;
    let done = false;
    return () => {
      if (done) return;
      done = true;
      this.release();
    };
  }

  /** The first holder (the one `acquire` returned it to) lets go. */
  release(): void {
    if (this.refs <= 0) throw new Error('block released more often than retained');
    if (--this.refs === 0) this.pool?.give(this.block);
  }
}

export interface PoolStats {
  /** Blocks allocated over the pool's life. */
  allocated: number;
  /** Acquisitions served from a free block. */
  reused: number;
  freeBlocks: number;
  freeBytes: number;
  /** What the free pool may keep now (see PoolOptions). */
  freeBound: number;
}

export interface PoolOptions {
  /** Free bytes never kept beyond this. */
  maxFreeBytes?: number;
  /** With it, the free pool keeps only what the writers filled (trim) in the last 10 s, scaled
   *  to this many milliseconds, plus `floorBytes`: what the next seconds will ask for. */
  horizonMs?: number;
  floorBytes?: number;
  /** Milliseconds, for the fill rate (tests drive it). */
  now?: () => number;
}

export class BlockPool {
  /** Free blocks by reservation, the newest last (reused first: its pages are warm). */
  private free = new Map<number, Block[]>();
  /** Free blocks in the order they came back: the oldest go first when over the bound. */
  private order: Block[] = [];
  private freeTotal = 0;
  private allocated = 0;
  private reused = 0;
  /** Bytes the writers filled (trim), with when: the fill rate. */
  private fills: { at: number; bytes: number }[] = [];
  private fillSum = 0;
  private readonly opts: Required<Omit<PoolOptions, 'horizonMs'>> & { horizonMs?: number };

  /** A number is `maxFreeBytes` alone (a fixed cap). */
  constructor(opts: PoolOptions | number = {}) {
    const o = typeof opts === 'number' ? { maxFreeBytes: opts } : opts;
    this.opts = {
      maxFreeBytes: o.maxFreeBytes ?? 256 * 1024 * 1024,
      horizonMs: o.horizonMs,
      floorBytes: o.floorBytes ?? 0,
      now: o.now ?? Date.now,
    };
  }

  /**
   * A block of at least `min` bytes, able to hold `reserve` without moving (its `buf` is the
   * whole reservation; only written pages take memory), held by the caller.
   */
  acquire(min: number, reserve = min): Lease {
    const size = classSize(Math.max(min, reserve));
    let best = 0;
    for (const [c, list] of this.free) {
      if (list.length > 0 && c >= size && c <= size * MAX_OVERSIZE && (best === 0 || c < best)) {
        best = c;
      }
    }
    const block = best > 0 ? this.free.get(best)!.pop() : undefined;
    if (block) {
      this.freeTotal -= block.extent;
      const i = this.order.lastIndexOf(block);
      if (i >= 0) this.order.splice(i, 1);
      this.reused++;
      return new Lease(block, this);
    }
    this.allocated++;
    this.settle();
    return new Lease(new Block(size), this);
  }

  /** Called by the last holder's release. */
  give(block: Block): void {
    const size = block.buf.length;
    let list = this.free.get(size);
    if (!list) {
      list = [];
      this.free.set(size, list);
    }
    list.push(block);
    this.order.push(block);
    this.freeTotal += block.extent;
    this.settle();
  }

  /** A writer filled `bytes` (Lease.trim): the rate the free pool is bounded by. */
  filled(bytes: number): void {
    const at = this.opts.now();
    this.fills.push({ at, bytes });
    this.fillSum += bytes;
  }

  /** Free bytes beyond the bound go back to the OS, oldest block first. Runs on every acquire
   *  and release; call it when neither may happen for a while (the segment pool's timer). */
  settle(): void {
    const bound = this.freeBound();
    while (this.freeTotal > bound && this.order.length > 0) {
      const old = this.order.shift()!;
      const l = this.free.get(old.buf.length)!;
      l.splice(l.indexOf(old), 1);
      this.freeTotal -= old.extent;
      old.keep(0); // its memory now, not when the GC gets to the block
    }
  }

  /** What the free pool may keep now, in bytes. */
  freeBound(): number {
    const { horizonMs, maxFreeBytes, floorBytes } = this.opts;
    if (horizonMs === undefined) return maxFreeBytes;
    const since = this.opts.now() - RATE_WINDOW_MS;
    while (this.fills.length > 0 && this.fills[0]!.at < since) {
      this.fillSum -= this.fills.shift()!.bytes;
    }
    const need = floorBytes + (this.fillSum * horizonMs) / RATE_WINDOW_MS;
    return Math.min(maxFreeBytes, Math.ceil(need));
  }

  /** Bytes the free blocks may hold resident. */
  freeBytes(): number {
    return this.freeTotal;
  }

  stats(): PoolStats {
    return {
      allocated: this.allocated,
      reused: this.reused,
      freeBlocks: this.order.length,
      freeBytes: this.freeTotal,
      freeBound: this.freeBound(),
    };
  }
}

/** The size class of a reservation: the next of eight steps per power of two, whole granules. */
export function classSize(min: number): number {
  const want = Math.max(GRANULE, Math.ceil(min));
  const octave = 2 ** Math.floor(Math.log2(want));
  const step = octave / STEPS_PER_OCTAVE;
  const size = Math.ceil(want / step) * step;
  return Math.ceil(size / GRANULE) * GRANULE;
}

/** Free segment bytes kept whatever the rate: a few segments of one stream. */
const SEGMENT_POOL_FLOOR = 8 * 1024 * 1024;
/** The free pool holds what the writers fill in this long. In steady state a stream's oldest
 *  segment leaves the store (its block comes back) just before the stream begins the next one,
 *  so the pool needs little beyond the jitter of readers letting go late and streams starting:
 *  half a 2 s segment of every stream. */
const SEGMENT_POOL_HORIZON_MS = 1_000;

/** The process-wide pool of segment blocks (HLS over TS and CMAF). */
export const segmentPool = new BlockPool({
  horizonMs: SEGMENT_POOL_HORIZON_MS,
  floorBytes: SEGMENT_POOL_FLOOR,
});
setInterval(() => segmentPool.settle(), 1_000).unref();
