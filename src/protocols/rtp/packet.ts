// RTP (RFC 3550) header parsing and a small reorder (jitter) buffer for `rtp` inputs.

export const RTP_VERSION = 2;
/** The fixed RTP header (no CSRC, no extension): what our outputs write. */
export const RTP_FIXED_HEADER = 12;

export interface RtpPacket {
  seq: number;
  ssrc: number;
  timestamp: number;
  payloadType: number;
  /** The marker bit (the last packet of a video access unit, RFC 6184/7798). */
  marker?: boolean;
  payload: Buffer;
}

/** Parse one datagram; returns null for anything that is not a well-formed RTP packet. */
export function parseRtp(d: Buffer): RtpPacket | null {
  if (d.length < RTP_FIXED_HEADER || d[0]! >> 6 !== RTP_VERSION) return null;
  const padding = (d[0]! & 0x20) !== 0;
  const extension = (d[0]! & 0x10) !== 0;
  const csrcCount = d[0]! & 0x0f;
  let off = RTP_FIXED_HEADER + 4 * csrcCount;
  if (extension) {
    if (off + 4 > d.length) return null;
    off += 4 + 4 * d.readUInt16BE(off + 2);
  }
  let end = d.length;
  if (padding) end -= d[d.length - 1]!;
  if (off > end) return null;
  return {
    seq: d.readUInt16BE(2),
    ssrc: d.readUInt32BE(8),
    timestamp: d.readUInt32BE(4),
    payloadType: d[1]! & 0x7f,
    marker: (d[1]! & 0x80) !== 0,
    payload: d.subarray(off, end),
  };
}

/** Write the fixed RTP header (version 2, no padding, extension or CSRC, marker clear) at the
 *  start of `d`. */
export function writeRtpHeader(
  d: Buffer,
  payloadType: number,
  seq: number,
  timestamp: number,
  ssrc: number,
): void {
  d[0] = RTP_VERSION << 6;
  d[1] = payloadType & 0x7f;
  d.writeUInt16BE(seq & 0xffff, 2);
  d.writeUInt32BE(timestamp >>> 0, 4);
  d.writeUInt32BE(ssrc >>> 0, 8);
}

/** Signed distance from a to b on the 16-bit sequence circle. */
export function seqDelta(a: number, b: number): number {
  return ((b - a + 0x8000) & 0xffff) - 0x8000;
}

/** Packets held while waiting for a missing one; past this a gap is declared. */
export const REORDER_DEPTH = 32;
/** RFC 3550 A.1: a jump ahead beyond MAX_DROPOUT or back beyond MAX_MISORDER is not loss or
 *  reordering but a new sequence (the sender restarted with a new random start): resync. */
export const MAX_DROPOUT = 3000;
export const MAX_MISORDER = 100;

/**
 * Counts sequence gaps and, when reordering is on, releases packets in sequence order: a
 * missing packet is waited for until `depth` later packets are held (REORDER_DEPTH unless the
 * owner says otherwise: the prompeg input waits as long as its FEC matrix needs, the rtsp input
 * 16 packets), or `flush()`. Duplicates and packets older than the last released are dropped.
 */
export class RtpSequencer {
  private expected = -1;
  private ssrc = -1;
  private held = new Map<number, RtpPacket>();
  lost = 0;
  reordered = 0;
  duplicates = 0;
  /** New sequences started (sender restarts, SSRC changes). */
  restarts = 0;

  constructor(
    private readonly reorder: boolean,
    private readonly emit: (packet: RtpPacket) => void,
    /** Later packets held before a missing one is given up. */
    public depth = REORDER_DEPTH,
  ) {}

  /** Packets held behind a missing one. */
  get holding(): number {
    return this.held.size;
  }

  /** The sequence number the next released packet must have (-1 before the first). */
  get expectedSeq(): number {
    return this.expected;
  }

  push(p: RtpPacket): void {
    let d = this.expected < 0 ? 0 : seqDelta(this.expected, p.seq);
    if (this.expected < 0 || p.ssrc !== this.ssrc || d > MAX_DROPOUT || d < -MAX_MISORDER) {
      // First packet, a new source, or a new sequence: start over from this packet. Without
      // this, a restart that happens to begin "behind" the old sequence was dropped as late
      // packets for up to 32 768 datagrams, and one "ahead" was counted as thousands lost.
      if (this.expected >= 0) {
        this.flush();
        this.restarts++;
      }
      this.ssrc = p.ssrc;
      this.expected = p.seq;
      d = 0;
    }
    if (!this.reorder) {
      if (d < 0) this.duplicates++;
      else {
        this.lost += d;
        this.expected = (p.seq + 1) & 0xffff;
        this.emit(p);
      }
      return;
    }
    if (d < 0 || this.held.has(p.seq)) {
      this.duplicates++;
      return;
    }
    if (d > 0) this.reordered++;
    this.held.set(p.seq, p);
    this.drain();
    if (this.held.size > this.depth) this.skipGap();
  }

  /** Give up on missing packets and release what is held (called on a timer). */
  flush(): void {
    while (this.held.size > 0) this.skipGap();
  }

  private drain(): void {
    for (;;) {
      const p = this.held.get(this.expected);
      if (!p) return;
      this.held.delete(this.expected);
      this.expected = (this.expected + 1) & 0xffff;
      this.emit(p);
    }
  }

  /** Give up on the first missing packet and release what follows it in order. */
  skipGap(): void {
    let best = -1;
    let bestD = Number.POSITIVE_INFINITY;
    for (const s of this.held.keys()) {
      const d = seqDelta(this.expected, s);
      if (d < bestD) {
        bestD = d;
        best = s;
      }
    }
    if (best < 0) return;
    this.lost += bestD;
    this.expected = best;
    this.drain();
  }
}
