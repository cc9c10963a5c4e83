// Reusable blocks for segment bytes. A fresh multi-megabyte Buffer per segment costs page
// faults on first touch and, at 100 channels, drives V8's external-memory heuristic into a
// mark-compact every second or two (bench/RESULTS.md, whole box). Blocks from this pool are
// allocated once and handed back explicitly when the last holder lets go.
//
// Ownership is counted, never guessed: whoever keeps a block's bytes past the current
// synchronous call (the writer filling it, the segment store, an HTTP response in flight, the
// archive recorder's write) holds a reference from `retain()` and gives it back exactly once.

/** Blocks are sized in steps of this many bytes (few size classes, little waste). */
const GRANULE = 64 * 1024;
/** Size classes: each power of two split in eight steps (waste ≤ 12.5 %). */
const STEPS_PER_OCTAVE = 8;
/** A free block up to this many times the asked size may serve a request (best fit first).
 *  Blocks that grew while a segment outran its estimate (doubling), or were sized for an earlier
 *  bitrate, would otherwise never be asked for again: they sat in the free list until the cap
 *  let them go, and every request beside them was a new allocation (page faults on first touch,
 *  external memory for V8 to collect). Measured at 80 channels: 27 free 4 MB blocks beside a
 *  stream of 2.5 MB misses. */
const MAX_OVERSIZE = 2;

/** One block and its holder count. `buf` is the whole block; holders use views of it. */
export class Lease {
  private refs = 1;

  constructor(
    readonly buf: Buffer,
    private readonly pool?: BlockPool,
  ) {}

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
    if (--this.refs === 0) this.pool?.give(this.buf);
  }
}

export interface PoolStats {
  /** Blocks allocated over the pool's life. */
  allocated: number;
  /** Acquisitions served from a free block. */
  reused: number;
  freeBlocks: number;
  freeBytes: number;
}

export class BlockPool {
  private free = new Map<number, Buffer[]>();
  /** Free blocks in the order they came back: the oldest go first when over the cap. */
  private order: Buffer[] = [];
  private freeBytes = 0;
  private allocated = 0;
  private reused = 0;

  /** `maxFreeBytes`: free blocks kept for reuse beyond this are left to the GC. */
  constructor(private readonly maxFreeBytes = 256 * 1024 * 1024) {}

  /** A block of at least `min` bytes (rounded up to its size class), held by the caller. */
  acquire(min: number): Lease {
    const size = classSize(min);
    // The smallest free block of this class or a larger one up to MAX_OVERSIZE times: segment
    // sizes wander around class boundaries, and a larger block beats a new allocation.
    let best = 0;
    for (const [c, list] of this.free) {
      if (list.length > 0 && c >= size && c <= size * MAX_OVERSIZE && (best === 0 || c < best)) {
        best = c;
      }
    }
    const buf = best > 0 ? this.free.get(best)!.pop() : undefined;
    if (buf) {
      this.freeBytes -= buf.length;
      const i = this.order.lastIndexOf(buf);
      if (i >= 0) this.order.splice(i, 1);
      this.reused++;
      return new Lease(buf, this);
    }
    this.allocated++;
    return new Lease(Buffer.allocUnsafeSlow(size), this);
  }

  /** Called by the last holder's release. */
  give(buf: Buffer): void {
    const size = buf.length;
    let list = this.free.get(size);
    if (!list) {
      list = [];
      this.free.set(size, list);
    }
    list.push(buf);
    this.order.push(buf);
    this.freeBytes += size;
    while (this.freeBytes > this.maxFreeBytes && this.order.length > 0) {
      const old = this.order.shift()!;
      const l = this.free.get(old.length)!;
      l.splice(l.indexOf(old), 1);
      this.freeBytes -= old.length;
    }
  }

  stats(): PoolStats {
    return {
      allocated: this.allocated,
      reused: this.reused,
      freeBlocks: this.order.length,
      freeBytes: this.freeBytes,
    };
  }
}

/** The size class of a request: the next of eight steps per power of two, in whole granules. */
export function classSize(min: number): number {
  const want = Math.max(GRANULE, Math.ceil(min));
  const octave = 2 ** Math.floor(Math.log2(want));
  const step = octave / STEPS_PER_OCTAVE;
  const size = Math.ceil(want / step) * step;
  return Math.ceil(size / GRANULE) * GRANULE;
}

/** The process-wide pool of segment blocks (HLS over TS and CMAF). */
export const segmentPool = new BlockPool();
