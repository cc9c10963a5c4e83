// The ps1 receiver's window (docs/ps1.md "Receiver"): DATA in, released in sequence order at
// timestamp + latency (the sender's clock mapped to ours by `base`), gaps NACKed at once and
// again every RTO, a gap given up when the packet after it is due. Pure: time is the `now`
// (monotonic ms) each call gets.
import type { RttEstimator } from './rtt.ts';

/** Packets held at most (a power of two: the ring's index is seq & mask). */
export const WINDOW_CAPACITY = 1 << 16;
/** The clock mapping is corrected from each 10 s of arrivals. */
export const DRIFT_WINDOW_MS = 10_000;
/** …by this fraction of the difference each time. */
const DRIFT_GAIN = 1 / 8;
/** A missing packet is asked for at least this many times within the latency. */
export const NACKS_PER_LATENCY = 4;

interface Slot {
  seq: number;
  ts: number;
  payload: Buffer;
}

export interface WindowCounters {
  received: number;
  retransmittedReceived: number;
  recovered: number;
  lost: number;
  late: number;
  duplicates: number;
  outOfWindow: number;
  nackedPackets: number;
}

export type PushResult = 'stored' | 'duplicate' | 'late' | 'outOfWindow';

export class ReceiveWindow {
  readonly counters: WindowCounters = {
    received: 0,
    retransmittedReceived: 0,
    recovered: 0,
    lost: 0,
    late: 0,
    duplicates: 0,
    outOfWindow: 0,
    nackedPackets: 0,
  };
  private readonly ring: (Slot | undefined)[];
  private readonly mask: number;
  /** The lowest sequence number not yet released or given up. */
  private next: number;
  /** One past the highest sequence number received. */
  private end: number;
  /** Missing sequence numbers → when to NACK them (next). Insertion order is ascending. */
  private readonly missing = new Map<number, number>();
  private base: number | undefined;
  private tsRef = 0;
  private driftMin = Number.POSITIVE_INFINITY;
  private driftStart = 0;

  constructor(
    private readonly latencyMs: number,
    private readonly rtt: RttEstimator,
    firstSeq = 0,
    capacity = WINDOW_CAPACITY,
  ) {
    this.ring = new Array(capacity);
    this.mask = capacity - 1;
    this.next = firstSeq;
    this.end = firstSeq;
  }

  /** The lowest sequence number still waited for (what ACK carries). */
  get ackSeq(): number {
    return this.next;
  }

  get missingCount(): number {
    return this.missing.size;
  }

  get held(): number {
    return this.end - this.next - this.missing.size;
  }

  /** The sender's 32-bit ms timestamp as a number continuing the previous ones. */
  private unwrap(ts32: number): number {
    const diff = (ts32 - this.tsRef) | 0; // signed distance mod 2^32
    const ts = this.tsRef + diff;
    if (diff > 0) this.tsRef = ts;
    return ts;
  }

  push(
    seq: number,
    ts32: number,
    payload: Buffer,
    now: number,
    retransmission: boolean,
  ): PushResult {
    if (seq < this.next) {
      this.counters.late++;
      return 'late';
    }
    if (seq - this.next > this.mask) {
      this.counters.outOfWindow++;
      return 'outOfWindow';
    }
    const i = seq & this.mask;
    if (this.ring[i]?.seq === seq) {
      this.counters.duplicates++;
      return 'duplicate';
    }
    if (this.base === undefined) {
      this.tsRef = ts32;
      this.base = now - ts32;
      this.driftStart = now;
    }
    const ts = this.unwrap(ts32);
    this.ring[i] = { seq, ts, payload };
    this.counters.received++;
    if (retransmission) this.counters.retransmittedReceived++;
    if (seq >= this.end) {
      for (let s = this.end; s < seq; s++) this.missing.set(s, now);
      this.end = seq + 1;
    } else if (this.missing.delete(seq)) {
      this.counters.recovered++;
    }
    if (!retransmission) this.trackDrift(now - ts, now);
    return 'stored';
  }

  /** Follow the smallest transit of each drift window (clock drift, a late first packet). */
  private trackDrift(transit: number, now: number): void {
    if (transit < this.driftMin) this.driftMin = transit;
    if (now - this.driftStart < DRIFT_WINDOW_MS) return;
    this.base = this.base! + (this.driftMin - this.base!) * DRIFT_GAIN;
    this.driftMin = Number.POSITIVE_INFINITY;
    this.driftStart = now;
  }

  private due(slot: Slot): number {
    return this.base! + slot.ts + this.latencyMs;
  }

  /** Everything due at `now`, in sequence order; gaps whose next packet is due are given up. */
  release(now: number, out: Buffer[] = []): Buffer[] {
    while (this.next < this.end) {
      const slot = this.ring[this.next & this.mask];
      if (slot && slot.seq === this.next) {
        if (this.due(slot) > now) break;
        out.push(slot.payload);
        this.ring[this.next & this.mask] = undefined;
        this.next++;
        continue;
      }
      // A gap: the first packet held after it decides (there is one: `end` was received).
      let s = this.next + 1;
      while (s < this.end && this.ring[s & this.mask]?.seq !== s) s++;
      const after = this.ring[s & this.mask];
      if (!after || this.due(after) > now) break;
      for (let g = this.next; g < s; g++) {
        this.missing.delete(g);
        this.counters.lost++;
      }
      this.next = s;
    }
    return out;
  }

  /** Sequence numbers to NACK now (ascending); each is asked again after an RTO, at most a
   *  quarter of the latency (so that four requests fit in the window whatever the RTT's
   *  variance did to the RTO). */
  nacks(now: number): number[] {
    const out: number[] = [];
    const again = now + Math.min(this.rtt.rtoMs, this.latencyMs / NACKS_PER_LATENCY);
    for (const [seq, at] of this.missing) {
      if (at > now) continue;
      out.push(seq);
      this.missing.set(seq, again);
    }
    this.counters.nackedPackets += out.length;
    return out;
  }
}
