// The ps1 sender's side of repair (docs/ps1.md "Sender"): the datagrams of a session kept as
// they went on the wire for a bounded time and count, and what a NACK makes it send again —
// each packet at most once per half RTT, within a retransmission budget that is a share of
// the session's own send rate. Pure: `now` is monotonic ms.
import { markRetransmission, type NackRange } from './packet.ts';

export const SEND_BUFFER_CAPACITY = 1 << 16;
/** The budget's floor, bytes/s: a slow stream can still repair a burst. */
export const MIN_BUDGET_BPS = 64_000;
/** The budget holds at most this much of its rate. */
const BUDGET_BURST_S = 0.5;
const RATE_WINDOW_MS = 1000;
/** Packets one NACK may make the sender look at; the rest of a larger request is `expired`. */
export const MAX_NACKED_PER_CALL = 4096;

interface Sent {
  seq: number;
  datagram: Buffer;
  sentAt: number;
  retransmittedAt: number;
}

export interface SendCounters {
  sent: number;
  sentBytes: number;
  retransmitted: number;
  retransmittedBytes: number;
  nacked: number;
  expired: number;
  capped: number;
  suppressed: number;
}

/** A token bucket filled at `pct` % of the measured send rate (at least MIN_BUDGET_BPS). */
export class RetransmitBudget {
  private tokens: number;
  private fill = MIN_BUDGET_BPS;
  private last: number;
  private windowStart: number;
  private windowBytes = 0;

  constructor(
    private readonly pct: number,
    now: number,
  ) {
    this.tokens = MIN_BUDGET_BPS * BUDGET_BURST_S;
    this.last = now;
    this.windowStart = now;
  }

  /** Original data sent: the rate the budget is a share of. */
  sent(bytes: number, now: number): void {
    this.windowBytes += bytes;
    const span = now - this.windowStart;
    if (span >= RATE_WINDOW_MS) {
      const rate = (this.windowBytes * 1000) / span;
      this.fill = Math.max(MIN_BUDGET_BPS, (rate * this.pct) / 100);
      this.windowBytes = 0;
      this.windowStart = now;
    }
  }

  take(bytes: number, now: number): boolean {
    const cap = this.fill * BUDGET_BURST_S;
    this.tokens = Math.min(cap, this.tokens + ((now - this.last) * this.fill) / 1000);
    this.last = now;
    if (this.tokens < bytes) return false;
    this.tokens -= bytes;
    return true;
  }
}

export class SendBuffer {
  readonly counters: SendCounters = {
    sent: 0,
    sentBytes: 0,
    retransmitted: 0,
    retransmittedBytes: 0,
    nacked: 0,
    expired: 0,
    capped: 0,
    suppressed: 0,
  };
  private readonly ring: (Sent | undefined)[];
  private readonly mask: number;
  private first = 0;
  private end = 0;
  readonly budget: RetransmitBudget;

  constructor(
    private readonly maxAgeMs: number,
    overheadPct: number,
    now: number,
    capacity = SEND_BUFFER_CAPACITY,
  ) {
    this.ring = new Array(capacity);
    this.mask = capacity - 1;
    this.budget = new RetransmitBudget(overheadPct, now);
  }

  /** The next datagram of the session went out (sequence numbers are consecutive). */
  add(seq: number, datagram: Buffer, now: number): void {
    if (this.end === this.first) this.first = seq;
    this.end = seq + 1;
    this.ring[seq & this.mask] = { seq, datagram, sentAt: now, retransmittedAt: -Infinity };
    while (this.end - this.first > this.mask + 1) this.ring[this.first++ & this.mask] = undefined;
    this.counters.sent++;
    this.counters.sentBytes += datagram.length;
    this.budget.sent(datagram.length, now);
    this.trim(now);
  }

  get size(): number {
    return this.end - this.first;
  }

  /** Drop what is older than the buffer's time. */
  trim(now: number): void {
    while (this.first < this.end) {
      const s = this.ring[this.first & this.mask];
      if (s && s.seq === this.first && now - s.sentAt <= this.maxAgeMs) break;
      this.ring[this.first & this.mask] = undefined;
      this.first++;
    }
  }

  /** The datagrams a NACK asks for that may go again now (flag set, bytes otherwise those
   *  first sent); `rttMs` spaces two retransmissions of one packet. */
  retransmit(ranges: readonly NackRange[], now: number, rttMs: number): Buffer[] {
    this.trim(now);
    const out: Buffer[] = [];
    const spacing = rttMs / 2;
    let budget = MAX_NACKED_PER_CALL;
    for (const r of ranges) {
      // Only what the buffer can hold is looked at: a forged range costs nothing more.
      const lo = Math.max(r.first, this.first);
      const hi = Math.min(r.first + r.count, this.end, lo + budget);
      const considered = Math.max(0, hi - lo);
      budget -= considered;
      this.counters.nacked += r.count;
      this.counters.expired += r.count - considered;
      for (let seq = lo; seq < hi; seq++) {
        const s = this.ring[seq & this.mask];
        if (!s || s.seq !== seq) {
          this.counters.expired++;
          continue;
        }
        if (now - s.retransmittedAt < spacing) {
          this.counters.suppressed++;
          continue;
        }
        if (!this.budget.take(s.datagram.length, now)) {
          this.counters.capped++;
          continue;
        }
        s.retransmittedAt = now;
        markRetransmission(s.datagram);
        out.push(s.datagram);
        this.counters.retransmitted++;
        this.counters.retransmittedBytes += s.datagram.length;
      }
    }
    return out;
  }
}
