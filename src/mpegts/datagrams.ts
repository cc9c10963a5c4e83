// Cutting a stream of TS packets (batches of any size) into datagrams of a fixed number of
// packets, as UDP, RTP and Pro-MPEG outputs send them: a tail shorter than a datagram waits for
// the next batch, so every datagram is whole (FEC matrices want equal sizes too).
import { TS_PACKET_SIZE } from './packet.ts';

export class DatagramCutter {
  private pending: Buffer[] = [];
  private pendingBytes = 0;
  private readonly full: number;

  constructor(readonly packetsPerDatagram: number) {
    this.full = TS_PACKET_SIZE * packetsPerDatagram;
  }

  /** Add `buf` (kept: the caller must not reuse it) and emit every datagram now complete; the
   *  datagrams are views valid during the call. */
  push(buf: Buffer, emit: (datagram: Buffer) => void): void {
    this.pending.push(buf);
    this.pendingBytes += buf.length;
    if (this.pendingBytes < this.full) return;
    const all = this.pending.length === 1 ? this.pending[0]! : Buffer.concat(this.pending);
    let o = 0;
    for (; o + this.full <= all.length; o += this.full) emit(all.subarray(o, o + this.full));
    const rest = all.subarray(o);
    this.pending = rest.length ? [Buffer.from(rest)] : [];
    this.pendingBytes = rest.length;
  }
}
