// Time as a dependency: production code reads time and sets timers only through a Clock,
// so tests drive time by hand instead of sleeping.

export interface Timer {
  cancel(): void;
}

export interface Clock {
  /** Milliseconds since the Unix epoch. */
  now(): number;
  /** Monotonic milliseconds, for durations. */
  monotonic(): number;
  setTimeout(fn: () => void, ms: number): Timer;
  setInterval(fn: () => void, ms: number): Timer;
}

export const systemClock: Clock = {
  now: () => Date.now(),
  monotonic: () => performance.now(),
  setTimeout(fn, ms) {
    const t = setTimeout(fn, ms);
    return { cancel: () => clearTimeout(t) };
  },
  setInterval(fn, ms) {
    const t = setInterval(fn, ms);
    return { cancel: () => clearInterval(t) };
  },
};

/** A clock moved by hand in tests: `advance(ms)` runs every timer that falls due. */
export class ManualClock implements Clock {
  private t: number;
  private mono = 0;
  private seq = 0;
  private timers = new Map<number, { at: number; fn: () => void; every?: number }>();

  constructor(start = Date.UTC(2026, 0, 1)) {
    this.t = start;
  }

  now(): number {
    return this.t;
  }

  monotonic(): number {
    return this.mono;
  }

  setTimeout(fn: () => void, ms: number): Timer {
    const id = ++this.seq;
    this.timers.set(id, { at: this.mono + Math.max(0, ms), fn });
    return { cancel: () => this.timers.delete(id) };
  }

  setInterval(fn: () => void, ms: number): Timer {
    const id = ++this.seq;
    const every = Math.max(1, ms);
    this.timers.set(id, { at: this.mono + every, fn, every });
    return { cancel: () => this.timers.delete(id) };
  }

  /** Move time forward, firing due timers in order. */
  advance(ms: number): void {
    const end = this.mono + ms;
    for (;;) {
      let nextId = -1;
      let nextAt = Number.POSITIVE_INFINITY;
      for (const [id, tm] of this.timers) {
        if (tm.at <= end && tm.at < nextAt) {
          nextAt = tm.at;
          nextId = id;
        }
      }
      if (nextId < 0) break;
      const tm = this.timers.get(nextId)!;
      this.t += nextAt - this.mono;
      this.mono = nextAt;
      if (tm.every) tm.at += tm.every;
      else this.timers.delete(nextId);
      tm.fn();
    }
    this.t += end - this.mono;
    this.mono = end;
  }
}
