// The timing of one programme fed into a constant-rate multiplex (the muxer): each packet gets
// a release time on the local clock from the source's own PCR, a fixed de-jitter delay after
// it arrived, so the multiplex sends the programme at the pace it was made, whatever the
// arrival jitter. The same anchor gives the PCR offset: a PCR sent at output position P (27 MHz
// ticks of the constant-rate timeline) is written as P + offset, so PCRs sit exactly on the
// constant-rate position and keep their distance to the programme's PTS. The anchor follows a
// source clock that drifts against ours by at most SLEW_TICKS per PCR, which bounds the PCR
// accuracy error (TR 101 290 5.3.2: ±500 ns); a PCR jump, or arrival far outside the window,
// re-anchors (a discontinuity: the multiplex marks it with discontinuity_indicator).
import { PCR_PER_MS, pcrDiff } from './pcr.ts';

/** Delay between arrival and release when the source's PCR is first seen, ms. */
export const DEJITTER_MS = 250;
/** Anchor moves per PCR when the source clock drifts: 6 ticks of 27 MHz = 222 ns. */
export const SLEW_TICKS = 6;
const SLEW_MS = SLEW_TICKS / PCR_PER_MS;
/** A packet this late (after its release time) or this early re-anchors. */
const MAX_LATE_MS = 1000;
const MAX_EARLY_MS = DEJITTER_MS + 2000;
/** A PCR step (between two PCRs of the source) beyond this, or backwards, is a jump. */
const MAX_PCR_STEP_MS = 1000;
/** The release margins of this many PCRs give the floor the anchor steers by. */
const FLOOR_WINDOW = 64;
const FLOOR_LOW_MS = DEJITTER_MS / 4;
const FLOOR_HIGH_MS = DEJITTER_MS;

export interface Release {
  /** Local clock time (ms) the packet may go out. */
  at: number;
  /** For a PCR packet: PCR to write = output position (ticks) + offset. */
  offset: number;
  /** A PCR that re-anchored the timing after an earlier anchor. */
  discontinuity: boolean;
}

export class SourceTiming {
  /** The last PCR and the local time it is released at (the anchor). */
  private pcr0 = -1;
  private t0 = 0;
  private intervalMs = 0;
  private bytesPerMs = 0;
  private bytesSince = 0;
  private margins: number[] = [];
  private resetPending = false;
  resyncs = 0;
  /** Ticks the anchor moved to follow the source clock. */
  slewTicks = 0;

  /** The source spliced or restarted: the next PCR anchors anew. */
  reset(): void {
    this.resetPending = true;
  }

  get anchored(): boolean {
    return this.pcr0 >= 0;
  }

  /** Release of a packet carrying PCR `pcr`, arrived at `now` (ms). */
  pcr(pcr: number, now: number): Release {
    let discontinuity = false;
    if (this.pcr0 < 0 || this.resetPending) {
      discontinuity = this.anchor(pcr, now);
    } else {
      const stepMs = pcrDiff(pcr, this.pcr0) / PCR_PER_MS;
      const at = this.t0 + stepMs;
      const margin = at - now;
      if (
        stepMs <= 0 ||
        stepMs > MAX_PCR_STEP_MS ||
        margin < -MAX_LATE_MS ||
        margin > MAX_EARLY_MS
      ) {
        discontinuity = this.anchor(pcr, now);
      } else {
        if (stepMs > 0) this.bytesPerMs = this.bytesSince / stepMs;
        this.intervalMs = stepMs;
        this.pcr0 = pcr;
        this.t0 = at;
        this.steer(margin);
      }
    }
    this.bytesSince = 0;
    return { at: this.t0, offset: this.pcr0 - this.t0 * PCR_PER_MS, discontinuity };
  }

  /** Release time of a packet without PCR arrived at `now`: after the last PCR, at the
   *  source's byte rate of the last PCR interval. NaN before the first PCR. */
  other(): number {
    if (this.pcr0 < 0) return Number.NaN;
    this.bytesSince += 188;
    if (this.bytesPerMs <= 0) return this.t0;
    return this.t0 + Math.min(this.intervalMs, this.bytesSince / this.bytesPerMs);
  }

  private anchor(pcr: number, now: number): boolean {
    const again = this.pcr0 >= 0;
    if (again) this.resyncs++;
    this.pcr0 = pcr;
    this.t0 = now + DEJITTER_MS;
    this.bytesPerMs = 0;
    this.intervalMs = 0;
    this.margins = [];
    this.resetPending = false;
    return again;
  }

  /** Keep the smallest recent margin between FLOOR_LOW_MS and FLOOR_HIGH_MS, a slew at a time. */
  private steer(margin: number): void {
    this.margins.push(margin);
    if (this.margins.length > FLOOR_WINDOW) this.margins.shift();
    if (this.margins.length < FLOOR_WINDOW / 4) return;
    const floor = Math.min(...this.margins);
    if (floor < FLOOR_LOW_MS) {
      this.t0 += SLEW_MS;
      this.slewTicks += SLEW_TICKS;
    } else if (floor > FLOOR_HIGH_MS) {
      this.t0 -= SLEW_MS;
      this.slewTicks -= SLEW_TICKS;
    }
  }
}
