// Real-time delivery of TS read faster than real time (a file, an HLS segment downloaded in
// 50 ms): packets are handed over no earlier than their PCR says, less a lead of one grid step
// (anchored to the clock at the first PCR, on the first PID that carries one), so downstream
// sees the source's rate. A PCR jump (discontinuity), a PCR that goes back, or falling more
// than MAX_LATE_MS behind re-anchors. Used by the `file` and `hls` inputs.
// Wake-ups are shared: a pacer's sleep ends at the first point of its grid (of the clock's
// monotonic time) at or after its due time, and one timer per clock serves every pacer waiting
// for that point — one wake-up of the event loop per tick for all inputs, not one per PCR per
// input (a PCR every 20–40 ms is common). The grid is TICK_MS while the stream's consumers
// want the packets evenly spread (a UDP output passes them on as they come), COARSE_TICK_MS
// while every one of them takes bursts (HTTP clients, the packager, an encoder): the same
// bytes at the same times give or take a step, for a fifth of the wake-ups.
import type { Clock, Timer } from '../util/clock.ts';
import { AFC_ADAPTATION, pid, TS_PACKET_SIZE } from './packet.ts';
import { PCR_PER_MS, readPcr } from './pcr.ts';

/** Grid of the shared wake-ups for consumers that want packets evenly spread; packets go out
 *  between their time less one step of their grid and it. */
export const TICK_MS = 20;
/** Grid for consumers that all take bursts (BusSink.acceptsBursts); a multiple of TICK_MS. */
export const COARSE_TICK_MS = 100;

/** The shared wake-ups of one clock: callbacks in buckets by grid point, one timer for the
 *  earliest. */
class Ticker {
  private readonly due = new Map<number, Set<() => void>>();
  private timer: Timer | null = null;
  private timerAt = Number.POSITIVE_INFINITY;

  constructor(private readonly clock: Clock) {}

  /** Call `fn` at the first point of the `grid` (a multiple of TICK_MS) at or after monotonic
   *  time `at`; returns a cancel. */
  at(at: number, grid: number, fn: () => void): () => void {
    const k = Math.ceil(at / grid) * (grid / TICK_MS);
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

  /** `smooth`: whether the consumers want packets evenly spread now (InputContext.smooth),
   *  asked before each wait; absent: always. */
  constructor(
    private readonly clock: Clock,
    private readonly out: (buf: Buffer) => void,
    private readonly smooth: () => boolean = () => true,
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
    // The PCRs are found in one pass now, while a segment just downloaded or a block just read
    // is in the cache: read packet by packet as each wait ends, every packet was a cache miss
    // (a tenth of an hls input's CPU at 32 pulls).
    const { offsets, values } = this.findPcrs(packets);
    let from = 0;
    let grid = this.grid();
    for (let i = 0; i < offsets.length && !this.closed; i++) {
      const o = offsets[i]!;
      const pcr = values[i]!;
      const now = this.clock.monotonic();
      const step = (pcr - this.lastPcr) / PCR_PER_MS;
      this.lastPcr = pcr;
      let due = this.anchor + (pcr - this.pcr0) / PCR_PER_MS;
      if (this.pcr0 < 0 || step < 0 || step > MAX_PCR_STEP_MS || due < now - MAX_LATE_MS) {
        this.pcr0 = pcr;
        this.anchor = now;
        due = now;
      }
      if (due > now + grid) {
        if (o > from) this.out(packets.subarray(from, o));
        from = o;
        await this.sleepUntil(due - grid, grid);
        grid = this.grid();
      }
    }
    if (!this.closed && from < packets.length) this.out(packets.subarray(from));
    const last = offsets.length ? offsets[offsets.length - 1]! : -1;
    this.bytesSincePcr = last < 0 ? this.bytesSincePcr + packets.length : packets.length - last;
  }

  /** The grid to wait on now, and the lead: what the stream's readers want. */
  private grid(): number {
    return this.smooth() ? TICK_MS : COARSE_TICK_MS;
  }

  /** Offsets and values of the PCRs of `packets` on the PCR PID (the first PID seen carrying
   *  one, since the last reset). */
  private findPcrs(packets: Buffer): { offsets: number[]; values: number[] } {
    const offsets: number[] = [];
    const values: number[] = [];
    let pcrPid = this.pcrPid;
    const end = packets.length - TS_PACKET_SIZE;
    for (let o = 0; o <= end; o += TS_PACKET_SIZE) {
      // Only packets with an adaptation field that has the PCR flag: one byte tells most
      // packets apart before their PID is read.
      if ((packets[o + 3]! & AFC_ADAPTATION) === 0) continue;
      const p = pid(packets, o);
      if (pcrPid >= 0 && p !== pcrPid) continue;
      const pcr = readPcr(packets, o);
      if (pcr < 0) continue;
      pcrPid = p;
      offsets.push(o);
      values.push(pcr);
    }
    this.pcrPid = pcrPid;
    return { offsets, values };
  }

  /** Until the first point of `grid` at or after monotonic time `at`. */
  private sleepUntil(at: number, grid: number): Promise<void> {
    return new Promise((resolve) => {
      if (this.closed) return resolve();
      this.wake = resolve;
      this.cancelWake = tickerOf(this.clock).at(at, grid, () => {
        this.cancelWake = null;
        this.wake = null;
        resolve();
      });
    });
  }
}
