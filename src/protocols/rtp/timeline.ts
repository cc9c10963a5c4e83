// RTP timestamps of several tracks of one session → presentation times on one timeline, no I/O.
// Each track's 32-bit RTP time is unwrapped in its own clock rate. Tracks are aligned, in order
// of preference: by RTP-Info `rtptime` (RFC 2326 12.33: every track's rtptime is the same
// instant), by RTCP sender reports (RFC 3550 6.4.1: NTP time ↔ RTP time per track), else by
// first-packet alignment (each track starts at its first packet's arrival after the session's
// first packet). Sender-report alignment corrects a track once, when both it and the reference
// track (the first to report) have reported and the two timelines disagree by more than
// SR_TOLERANCE_S.

export const SR_TOLERANCE_S = 0.005;

interface TrackTime {
  rate: number;
  lastTs: number;
  ext: number;
  /** The extended RTP time at timeline 0. */
  base: number | undefined;
  rtptime: number | undefined;
  sr: { ntpS: number; rtp: number } | null;
  srAligned: boolean;
}

export class RtpTimeline {
  private readonly tracks: TrackTime[] = [];
  private firstArrivalMs = -1;
  /** Tracks moved by sender-report alignment. */
  srCorrections = 0;

  /** A track of `rate` Hz; its index is what the other calls take. */
  addTrack(rate: number, rtptime?: number): number {
    this.tracks.push({
      rate,
      lastTs: -1,
      ext: 0,
      base: undefined,
      rtptime,
      sr: null,
      srAligned: false,
    });
    return this.tracks.length - 1;
  }

  /** RTP-Info aligns only when it names every track; call after adding them all. */
  useRtpInfo(): boolean {
    const all = this.tracks.every((t) => t.rtptime !== undefined);
    if (!all) for (const t of this.tracks) t.rtptime = undefined;
    return all;
  }

  /** The timeline time (in the track's clock ticks) of a frame with RTP time `ts` arriving at
   *  `nowMs`. */
  time(track: number, ts: number, nowMs: number): number {
    const t = this.tracks[track]!;
    if (t.lastTs < 0) t.ext = ts;
    else t.ext += ((ts - t.lastTs + 0x80000000) >>> 0) - 0x80000000;
    t.lastTs = ts;
    if (t.base === undefined) {
      if (t.rtptime !== undefined) t.base = t.ext - ((ts - t.rtptime) | 0);
      else {
        if (this.firstArrivalMs < 0) this.firstArrivalMs = nowMs;
        t.base = t.ext - Math.round(((nowMs - this.firstArrivalMs) / 1000) * t.rate);
      }
      this.align();
    }
    return t.ext - t.base;
  }

  /** An RTCP sender report of `track`: NTP timestamp (seconds since 1900, 64-bit fixed point
   *  as two words) and the RTP time of the same instant. */
  senderReport(track: number, ntpSec: number, ntpFrac: number, rtp: number): void {
    const t = this.tracks[track];
    if (!t) return;
    t.sr = { ntpS: ntpSec + ntpFrac / 2 ** 32, rtp };
    this.align();
  }

  /** The extended RTP time of `rtp` near the track's latest one. */
  private extOf(t: TrackTime, rtp: number): number {
    if (t.lastTs < 0) return rtp;
    return t.ext + (((rtp - t.lastTs + 0x80000000) >>> 0) - 0x80000000);
  }

  private align(): void {
    if (this.tracks.some((t) => t.rtptime !== undefined)) return;
    const ref = this.tracks.find((t) => t.sr && t.base !== undefined);
    if (!ref?.sr) return;
    ref.srAligned = true;
    for (const t of this.tracks) {
      if (t === ref || t.srAligned || !t.sr || t.base === undefined) continue;
      // The reference's timeline time (seconds) at the NTP instant of this track's report.
      const refRtp = this.extOf(ref, ref.sr.rtp) + (t.sr.ntpS - ref.sr.ntpS) * ref.rate;
      const refS = (refRtp - ref.base!) / ref.rate;
      const base = Math.round(this.extOf(t, t.sr.rtp) - refS * t.rate);
      t.srAligned = true;
      if (Math.abs(base - t.base) / t.rate > SR_TOLERANCE_S) {
        t.base = base;
        this.srCorrections++;
      }
    }
  }
}
