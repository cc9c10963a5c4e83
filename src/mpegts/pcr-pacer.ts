// Real-time delivery of TS read faster than real time (a file, an HLS segment downloaded in
// 50 ms): packets are handed over no earlier than their PCR says (anchored to the clock at the
// first PCR, on the first PID that carries one), so downstream sees the source's rate. A PCR
// jump (discontinuity), a PCR that goes back, or falling more than MAX_LATE_MS behind
// re-anchors. Used by the `file` and `hls` inputs.
// Wake-ups are shared: a pacer's sleep ends at the first point of a TICK_MS grid (of the clock's
// monotonic time) at or after its due time, and one timer per clock serves every pacer waiting
// for that point — one wake-up of the event loop per tick for all inputs, not one per PCR per
// input (a PCR every 20–40 ms is common).
import type { Clock, Timer } from '../util/clock.ts';
import { pid, TS_PACKET_SIZE } from './packet.ts';
import { PCR_PER_MS, readPcr } from './pcr.ts';

const LEAD_MS = 20;
/** Grid of the shared wake-ups; packets go out between their time less LEAD_MS and it. */
export const TICK_MS = 20;

/** The shared wake-ups of one clock: callbacks in buckets by grid point, one timer for the
 *  earliest. */
class Ticker {
  private readonly due = new Map<number, Set<() => void>>();
  private timer: Timer | null = null;
  private timerAt = Number.POSITIVE_INFINITY;

  constructor(private readonly clock: Clock) {}

  /** Call `fn` at the first grid point at or after monotonic time `at`; returns a cancel. */
  at(at: number, fn: () => void): () => void {
    const k = Math.ceil(at / TICK_MS);
    let set = this.due.get(k);
    if (!set) {
      set = new Set();
      this.due.set(k, set);
    }
    set.add(fn);
    if (k < this.timerAt) this.arm(k);
    return () => {
      const b = this.due.get(k);
      if (b?.delete(fn) && b.size === 0) this.due.delete(k);
    };
  }

  private arm(k: number): void {
    this.timer?.cancel();
    this.timerAt = k;
    const ms = Math.max(0, Math.ceil(k * TICK_MS - this.clock.monotonic()));
    this.timer = this.clock.setTimeout(() => this.fire(), ms);
  }

  private fire(): void {
    this.timer = null;
    this.timerAt = Number.POSITIVE_INFINITY;
    // Timers count from the event loop's cached time and may fire a little before the point
    // by this clock: up to half a tick early is on time.
    const now = this.clock.monotonic() + TICK_MS / 2;
    const run: (() => void)[] = [];
    let next = Number.POSITIVE_INFINITY;
    for (const [k, set] of this.due) {
      if (k * TICK_MS <= now) {
        this.due.delete(k);
        for (const fn of set) run.push(fn);
      } else if (k < next) next = k;
    }
    if (next < Number.POSITIVE_INFINITY) this.arm(next);
    for (const fn of run) fn();
  }
}

const tickers = new WeakMap<Clock, Ticker>();

function tickerOf(clock: Clock): Ticker {
  let t = tickers.get(clock);
  if (!t) {
    t = new Ticker(clock);
    tickers.set(clock, t);
  }
  return t;
}
const MAX_PCR_STEP_MS = 2000;
const MAX_LATE_MS = 1000;

export class PcrPacer {
  private pcrPid = -1;
  private pcr0 = -1;
  private lastPcr = -1;
  private anchor = 0;
  private cancelWake: (() => void) | null = null;
  private wake: (() => void) | null = null;
  private closed = false;
  /** Bytes handed over since the last PCR (a source without PCR needs pacing of its own). */
  bytesSincePcr = 0;

  constructor(
    private readonly clock: Clock,
    private readonly out: (buf: Buffer) => void,
  ) {}

  /** Forget the time base (the next PCR anchors anew). */
  reset(): void {
    this.pcr0 = -1;
    this.pcrPid = -1;
  }

  close(): void {
    this.closed = true;
    this.cancelWake?.();
    this.cancelWake = null;
    this.wake?.();
    this.wake = null;
  }

  /** Deliver `packets` (aligned) paced by their PCR; resolves when all are handed over. */
  async play(packets: Buffer): Promise<void> {
    let from = 0;
    let lastPcrAt = -1;
    for (let o = 0; o + TS_PACKET_SIZE <= packets.length && !this.closed; o += TS_PACKET_SIZE) {
      const p = pid(packets, o);
      const pcr = this.pcrPid < 0 || p === this.pcrPid ? readPcr(packets, o) : -1;
      if (pcr < 0) continue;
      this.pcrPid = p;
      lastPcrAt = o;
      const now = this.clock.monotonic();
      const step = (pcr - this.lastPcr) / PCR_PER_MS;
      this.lastPcr = pcr;
      let due = this.anchor + (pcr - this.pcr0) / PCR_PER_MS;
      if (this.pcr0 < 0 || step < 0 || step > MAX_PCR_STEP_MS || due < now - MAX_LATE_MS) {
        this.pcr0 = pcr;
        this.anchor = now;
        due = now;
      }
      if (due > now + LEAD_MS) {
        if (o > from) this.out(packets.subarray(from, o));
        from = o;
        await this.sleepUntil(due - LEAD_MS);
      }
    }
    if (!this.closed && from < packets.length) this.out(packets.subarray(from));
    this.bytesSincePcr =
      lastPcrAt < 0 ? this.bytesSincePcr + packets.length : packets.length - lastPcrAt;
  }

  /** Until the first tick at or after monotonic time `at`. */
  private sleepUntil(at: number): Promise<void> {
    return new Promise((resolve) => {
      if (this.closed) return resolve();
      this.wake = resolve;
      this.cancelWake = tickerOf(this.clock).at(at, () => {
        this.cancelWake = null;
        this.wake = null;
        resolve();
      });
    });
  }
}
