// Memory for the bodies of one hls input, within a limit (docs/inputs-pull.md, Bounds): a
// segment's body is put in a buffer taken here, given back once it has played and reused for
// the next, and dropped (left to the collector) the moment it is refused. `held` counts every
// byte taken and not dropped, in use or kept for reuse, so what an input holds is known.

/** First size of a body buffer when the length is not announced (chunked, close-delimited). */
const UNKNOWN_LENGTH_START = 256 * 1024;
const ROUND = 64 * 1024;

export class BodyBuffers {
  private readonly free: Buffer[] = [];
  /** Buffers handed out and neither given back nor dropped: their memory and its size. Only
   *  these are ever reused (a Buffer from Node's shared pool handed back by mistake would be
   *  written over under its other owners). */
  private readonly lent = new Map<ArrayBufferLike, number>();
  private heldBytes = 0;
  private peakBytes = 0;

  constructor(
    readonly limit = Number.POSITIVE_INFINITY,
    private readonly keep = 4,
  ) {}

  /** Bytes taken and not dropped (in use or kept for reuse). */
  get held(): number {
    return this.heldBytes;
  }

  /** Bytes of the buffers in use (held, less those kept for reuse). */
  get lentBytes(): number {
    let free = 0;
    for (const b of this.free) free += b.length;
    return this.heldBytes - free;
  }

  /** The most `held` has been. */
  get peak(): number {
    return this.peakBytes;
  }

  /** A buffer of at least `size` bytes and, when new, at most `max` (contents undefined); null
   *  when the limit leaves no room even with the kept ones let go. */
  take(size: number, max = Number.POSITIVE_INFINITY): Buffer | null {
    for (let i = 0; i < this.free.length; i++) {
      const b = this.free[i]!;
      if (b.length >= size) {
        this.free.splice(i, 1);
        this.lent.set(b.buffer, b.length);
        return b;
      }
    }
    // Room to grow (segments of a stream vary in size), never past the body's cap.
    const want = Math.max(size, Math.min(max, Math.ceil((size * 1.25) / ROUND) * ROUND));
    while (this.heldBytes + want > this.limit && this.free.length > 0) {
      this.heldBytes -= this.free.shift()!.length;
    }
    if (this.heldBytes + want > this.limit) return null;
    const b = Buffer.allocUnsafeSlow(want);
    this.heldBytes += want;
    this.peakBytes = Math.max(this.peakBytes, this.heldBytes);
    this.lent.set(b.buffer, want);
    return b;
  }

  /** Hand back a body (or any view of a buffer from take()) for reuse; it must not be read
   *  afterwards. Buffers not from take() are ignored. */
  give(view: Buffer): void {
    const size = this.lent.get(view.buffer);
    if (size === undefined) return;
    this.lent.delete(view.buffer);
    if (this.free.length >= this.keep) this.heldBytes -= this.free.shift()!.length;
    this.free.push(Buffer.from(view.buffer, 0, size));
  }

  /** Let a body's memory go (refused, failed): no longer held, never reused. */
  drop(view: Buffer): void {
    const size = this.lent.get(view.buffer);
    if (size === undefined) return;
    this.lent.delete(view.buffer);
    this.heldBytes -= size;
  }
}

/** Why a body was not taken: over its own cap, or no room left in the input's limit. */
export type BodyRefusal =
  | { kind: 'cap'; bytes: number; declared: boolean; cap: number }
  | { kind: 'memory'; held: number; limit: number };

/** A refusal in words (the input puts the segment and its URL in front). */
export function refusalWords(r: BodyRefusal): string {
  return r.kind === 'cap'
    ? `body of ${r.bytes} bytes${r.declared ? '' : ' or more'} is over the cap of ${r.cap} bytes`
    : `no room for the body: the input holds ${r.held} of its ${r.limit} bytes`;
}

/** One body arriving into memory, from `bodies` when given (else a buffer of its own), never
 *  past `max` bytes. A refusal lets its memory go at once. */
export class IncomingBody {
  buf: Buffer | null = null;
  got = 0;

  constructor(
    private readonly bodies: BodyBuffers | undefined,
    readonly max: number,
  ) {}

  /** Memory for a body of `declared` bytes (-1: not announced); a refusal, or null. */
  begin(declared: number): BodyRefusal | null {
    if (declared > this.max) return { kind: 'cap', bytes: declared, declared: true, cap: this.max };
    const size = declared >= 0 ? declared : Math.min(UNKNOWN_LENGTH_START, this.max);
    this.buf = this.alloc(size);
    return this.buf ? null : this.noRoom();
  }

  /** Room for `n` more bytes at `got` (the buffer grows, the bytes so far copied); a refusal
   *  (the memory let go), or null. */
  room(n: number): BodyRefusal | null {
    const need = this.got + n;
    if (need > this.max) {
      this.release();
      return { kind: 'cap', bytes: need, declared: false, cap: this.max };
    }
    const old = this.buf;
    if (!old || need <= old.length) return null;
    const bigger = this.alloc(Math.min(this.max, Math.max(need, old.length * 2)));
    if (!bigger) {
      this.release();
      return this.noRoom();
    }
    old.copy(bigger, 0, 0, this.got);
    this.bodies?.drop(old);
    this.buf = bigger;
    return null;
  }

  /** `chunk` appended after the bytes so far; a refusal, or null. */
  append(chunk: Buffer): BodyRefusal | null {
    const refused = this.room(chunk.length);
    if (refused) return refused;
    chunk.copy(this.buf!, this.got);
    this.got += chunk.length;
    return null;
  }

  /** The body (a view of its memory; empty when none was taken). */
  result(): Buffer {
    return this.buf ? this.buf.subarray(0, this.got) : Buffer.alloc(0);
  }

  /** The body failed: its memory goes. */
  release(): void {
    if (this.buf) this.bodies?.drop(this.buf);
    this.buf = null;
    this.got = 0;
  }

  private alloc(size: number): Buffer | null {
    return this.bodies ? this.bodies.take(size, this.max) : Buffer.allocUnsafe(size);
  }

  private noRoom(): BodyRefusal {
    return { kind: 'memory', held: this.bodies?.held ?? 0, limit: this.bodies?.limit ?? 0 };
  }
}

/** Bytes in words for an operator: `40 MiB`, `512 KiB`, `900 bytes`. */
export function sizeWords(n: number): string {
  if (n >= 1024 * 1024) return `${+(n / (1024 * 1024)).toFixed(n % (1024 * 1024) ? 1 : 0)} MiB`;
  if (n >= 1024) return `${+(n / 1024).toFixed(n % 1024 ? 1 : 0)} KiB`;
  return `${n} bytes`;
}
