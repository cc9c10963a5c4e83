// Real-time delivery of TS read faster than real time (a file, an HLS segment downloaded in
// 50 ms): packets are handed over no earlier than their PCR says (anchored to the clock at the
// first PCR, on the first PID that carries one), so downstream sees the source's rate. A PCR
// jump (discontinuity), a PCR that goes back, or falling more than MAX_LATE_MS behind
// re-anchors. Used by the `file` and `hls` inputs.
import type { Clock, Timer } from '../util/clock.ts';
import { pid, TS_PACKET_SIZE } from './packet.ts';
import { PCR_PER_MS, readPcr } from './pcr.ts';

const LEAD_MS = 20;
const MAX_PCR_STEP_MS = 2000;
const MAX_LATE_MS = 1000;

export class PcrPacer {
  private pcrPid = -1;
  private pcr0 = -1;
  private lastPcr = -1;
  private anchor = 0;
  private timer: Timer | null = null;
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
    this.timer?.cancel();
    this.timer = null;
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
        await this.sleep(due - now - LEAD_MS);
      }
    }
    if (!this.closed && from < packets.length) this.out(packets.subarray(from));
    this.bytesSincePcr =
      lastPcrAt < 0 ? this.bytesSincePcr + packets.length : packets.length - lastPcrAt;
  }

  private sleep(ms: number): Promise<void> {
    return new Promise((resolve) => {
      if (this.closed) return resolve();
      this.wake = resolve;
      this.timer = this.clock.setTimeout(() => {
        this.timer = null;
        this.wake = null;
        resolve();
      }, ms);
    });
  }
}
