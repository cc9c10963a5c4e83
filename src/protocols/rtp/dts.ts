// Decoding times for video that carries presentation times only (RTP), no I/O. With a reorder
// depth of N frames (from the SPS: reorder-depth.ts), the decoding time of each frame is the
// (N+1)-th largest presentation time seen so far: the sorted PTS sequence shifted by N frames,
// the same rule ffmpeg applies to streams without DTS. For a stream of constant frame rate
// this gives PTS − DTS = N × frame duration on I and P frames, 0 on non-reference B frames,
// DTS strictly increasing and never after PTS; it needs no frame duration and adds no delay.
// Only the first N frames have no N larger times before them: the first 2N + 1 frames are held
// and those N get DTS extrapolated back by the frame duration measured over the next N.
//
// When the SPS does not tell the depth (H.264 without VUI bitstream_restriction, Main or High
// profile) it is learnt: it starts at 0 (DTS = PTS) and grows to the deepest reordering seen
// (an SPS that declares too little is corrected the same way). The frames before the one that
// reveals the deeper reordering are out already with DTS too late: that frame's DTS steps back
// to the sorted sequence once (`stepBack` on it, counted in `errors`), so the caller can mark
// a discontinuity there, and every DTS after it is right. A jump of the presentation times
// (more than JUMP_S either way) starts the derivation over.

export const JUMP_S = 5;

export interface TimedFrame<T> {
  pts: number;
  dts: number;
  item: T;
  /** This DTS is before the previous one: the reorder depth was found larger than assumed. */
  stepBack?: true;
}

export interface DtsStats {
  /** The reorder depth in use (frames). */
  depth: number;
  /** Where it came from: 'sps', or 'learnt' from the order of the presentation times. */
  source: 'sps' | 'learnt';
  /** Frames given a DTS that steps back, or that had to be DTS = PTS: the depth was too small. */
  errors: number;
  /** Times the depth grew: a deeper reordering seen, or a new SPS declaring more. */
  grown: number;
  restarts: number;
}

export class DtsFromPts<T> {
  private depth = 0;
  private source: 'sps' | 'learnt' = 'learnt';
  /** The largest presentation times seen, ascending (at most MAX + 1 kept). */
  private top: number[] = [];
  private seen = 0;
  private lastDts = Number.NEGATIVE_INFINITY;
  private lastPts = 0;
  /** Frames held at the start, with their candidate DTS (NaN for the first `depth`). */
  private held: { pts: number; cand: number; item: T }[] = [];
  private holding = true;
  /** The depth grew: the next DTS may step back to the sorted sequence. */
  private reanchor = false;
  private errors = 0;
  private grown = 0;
  private restarts = 0;

  /** `rate`: ticks per second of the times. `maxDepth`: the most a depth can be. */
  constructor(
    private readonly rate: number,
    private readonly maxDepth = 16,
  ) {}

  /** The depth an SPS declares. Raised only: a smaller one later is kept at the larger (a
   *  DTS further before its PTS is still valid; shrinking would stall the DTS). */
  setDepth(n: number): void {
    const d = Math.min(Math.max(0, Math.floor(n)), this.maxDepth);
    if (this.source === 'sps' && d <= this.depth) return;
    if (this.seen > 0 && d > this.depth) {
      this.grown++;
      this.reanchor = !this.holding;
    }
    this.source = 'sps';
    this.depth = this.seen === 0 ? d : Math.max(this.depth, d);
  }

  /** One frame in decoding order; returns the frames whose DTS is now known, in order. */
  push(pts: number, item: T): TimedFrame<T>[] {
    const out: TimedFrame<T>[] = [];
    if (this.seen > 0 && Math.abs(pts - this.lastPts) > JUMP_S * this.rate) {
      this.release(out);
      this.restart();
    }
    this.lastPts = pts;
    this.insert(pts);
    this.seen++;
    // How many frames before this one present later: its reordering.
    const later = this.top.length - 1 - this.top.lastIndexOf(pts);
    if (later > this.depth) {
      this.depth = Math.min(later, this.maxDepth);
      this.grown++;
      this.reanchor = !this.holding;
    }
    const cand = this.seen > this.depth ? this.top[this.top.length - 1 - this.depth]! : Number.NaN;
    if (this.holding) {
      this.held.push({ pts, cand, item });
      if (this.seen >= 2 * this.depth + 1) this.release(out);
      return out;
    }
    out.push(this.checked(pts, cand, item));
    return out;
  }

  /** Hand over the held frames (at the end, or before a restart) with the best DTS known. */
  flush(): TimedFrame<T>[] {
    const out: TimedFrame<T>[] = [];
    this.release(out);
    return out;
  }

  stats(): DtsStats {
    return {
      depth: this.depth,
      source: this.source,
      errors: this.errors,
      grown: this.grown,
      restarts: this.restarts,
    };
  }

  private restart(): void {
    this.top = [];
    this.seen = 0;
    this.lastDts = Number.NEGATIVE_INFINITY;
    this.holding = true;
    this.reanchor = false;
    this.restarts++;
  }

  private insert(pts: number): void {
    const top = this.top;
    let i = top.length;
    while (i > 0 && top[i - 1]! > pts) i--;
    top.splice(i, 0, pts);
    if (top.length > this.maxDepth + 1) top.shift();
  }

  /** The held frames out: the first ones (no candidate yet) extrapolated back from the first
   *  candidate by the frame duration the candidates after it show. */
  private release(out: TimedFrame<T>[]): void {
    this.holding = false;
    const held = this.held;
    this.held = [];
    if (held.length === 0) return;
    const known = held.map((h) => h.cand).filter((c) => !Number.isNaN(c));
    let first: number;
    let step: number;
    if (known.length === 0) {
      // Ended before a DTS was known: the smallest PTS held, one tick apart before it.
      first = Math.min(...held.map((h) => h.pts));
      step = 1;
    } else {
      first = known[0]!;
      step = known.length > 1 ? (known[known.length - 1]! - first) / (known.length - 1) : 1;
      if (!(step > 0)) step = 1;
    }
    const missing = held.length - known.length;
    held.forEach((h, i) => {
      const dts = Number.isNaN(h.cand) ? Math.round(first - (missing - i) * step) : h.cand;
      out.push(this.checked(h.pts, dts, h.item));
    });
  }

  /** DTS ≤ PTS and strictly increasing, except one step back after the depth grew; a frame
   *  for which both cannot hold keeps DTS = PTS. */
  private checked(pts: number, cand: number, item: T): TimedFrame<T> {
    let dts = cand;
    let stepBack = false;
    if (this.reanchor) {
      this.reanchor = false;
      if (dts <= this.lastDts) {
        stepBack = true;
        this.errors++;
        this.lastDts = Number.NEGATIVE_INFINITY;
      }
    }
    if (dts <= this.lastDts) dts = this.lastDts + 1;
    if (dts > pts) {
      this.errors++;
      dts = pts;
    }
    this.lastDts = Math.max(this.lastDts, dts);
    return stepBack ? { pts, dts, item, stepBack } : { pts, dts, item };
  }
}
