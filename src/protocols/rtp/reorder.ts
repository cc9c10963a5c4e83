// Puts RTP packets of one source back in sequence order before depacketizing (UDP may reorder),
// no I/O: a packet missing from the sequence is waited for until `depth` later packets are held,
// then given up (the depacketizer counts it lost). Duplicates and packets older than the last
// released are dropped; a jump beyond MAX_DROPOUT or back beyond MAX_MISORDER (RFC 3550 A.1) or
// a new SSRC restarts the sequence.
import { MAX_DROPOUT, MAX_MISORDER, type RtpPacket, seqDelta } from './packet.ts';

export const REORDER_PACKETS = 16;

export class RtpReorder {
  private expected = -1;
  private ssrc = -1;
  private readonly held = new Map<number, RtpPacket>();
  reordered = 0;
  duplicates = 0;

  constructor(
    private readonly emit: (p: RtpPacket) => void,
    private readonly depth = REORDER_PACKETS,
  ) {}

  push(p: RtpPacket): void {
    let d = this.expected < 0 ? 0 : seqDelta(this.expected, p.seq);
    if (this.expected < 0 || p.ssrc !== this.ssrc || d > MAX_DROPOUT || d < -MAX_MISORDER) {
      this.flush();
      this.ssrc = p.ssrc;
      this.expected = p.seq;
      d = 0;
    }
    if (d < 0 || this.held.has(p.seq)) {
      this.duplicates++;
      return;
    }
    if (d === 0 && this.held.size === 0) {
      // The common case: in order, nothing waiting.
      this.expected = (p.seq + 1) & 0xffff;
      this.emit(p);
      return;
    }
    if (d > 0) this.reordered++;
    this.held.set(p.seq, p);
    this.drain();
    while (this.held.size > this.depth) this.skip();
  }

  /** Release everything held, in order, giving up on what is missing. */
  flush(): void {
    while (this.held.size > 0) this.skip();
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

  private skip(): void {
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
    this.expected = best;
    this.drain();
  }
}
