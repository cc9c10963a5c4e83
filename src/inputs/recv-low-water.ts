// Fewer wake-ups per byte for TCP pull inputs: each registered socket's receive low-water mark
// (SO_RCVLOWAT, src/native/socket.ts) follows its measured rate, so the kernel reports it
// readable about once per HOLD_MS of its bytes instead of once per segment the peer sent (an
// RTMP origin sends every audio and video message as it comes: ~70 a second per stream).
// One shared tick per clock measures the rates and bounds the wait: a socket not read for
// RELEASE_MS has its mark dropped to 1, which hands over whatever is queued at once, so no
// byte waits more than RELEASE_MS + TICK_MS however the rate changes (a stall, the last bytes
// before a pause).
import type { Socket } from 'node:net';
import { setRecvLowWater, socketFd } from '../native/socket.ts';
import type { Clock, Timer } from '../util/clock.ts';

/** The mark aims at this much of the socket's bytes per read. */
export const HOLD_MS = 25;
/** Rates are measured and waits bounded on this shared tick. */
export const TICK_MS = 40;
/** A socket with a mark and no read for this long gets mark 1 (its queued bytes go at once). */
export const RELEASE_MS = 60;
/** Below this a mark saves too few wake-ups to be worth the system calls: the socket keeps 1. */
export const MIN_MARK = 2048;
/** The most bytes held (a 50 Mbit/s stream's HOLD_MS). */
export const MAX_MARK = 256 * 1024;
/** Ticks of rate measured before a first mark is set (the handshake and first answers go with
 *  mark 1). */
const WARM_TICKS = 5;
/** Weight of one tick's rate in the smoothed rate (~16 ticks: a key frame does not move it). */
const RATE_WEIGHT = 1 / 16;
/** A new mark is set when the target moves by more than this fraction of the current one. */
const HYSTERESIS = 0.25;

type SetMark = (fd: number, bytes: number) => void;

/** One socket under the shared tick: `read(n)` after every read, `remove()` before it closes. */
export interface LowWaterSocket {
  read(n: number): void;
  remove(): void;
}

interface Entry extends LowWaterSocket {
  readonly fdOf: () => number;
  mark: number;
  /** The mark its rate asks for (mark is 1 for a moment after a release). */
  target: number;
  /** Bytes a millisecond, smoothed over ticks. */
  rate: number;
  bytes: number;
  ticks: number;
  lastRead: number;
}

/** The sockets of one clock and their shared tick. */
export class RecvLowWater {
  private readonly sockets = new Set<Entry>();
  private timer: Timer | null = null;
  private lastTick = 0;
  /** Reads, marks set, releases (for tests and the benches). */
  readonly counters = { reads: 0, marksSet: 0, releases: 0, errors: 0 };

  constructor(
    private readonly clock: Clock,
    private readonly setMark: SetMark = setRecvLowWater,
  ) {}

  /** Put a connected TCP socket under the tick; null when it has no kernel fd (TLS, closed).
   *  Its fd is read again at every tick, so a socket destroyed before `remove()` is never
   *  mistaken for a later socket given the same fd number. */
  add(socket: Socket): LowWaterSocket | null {
    return socketFd(socket) < 0 ? null : this.addFd(() => socketFd(socket));
  }

  /** As add(), for a descriptor the caller tracks (-1 once it is closed). */
  addFd(fdOf: () => number): LowWaterSocket {
    const now = this.clock.monotonic();
    const e: Entry = {
      fdOf,
      mark: 1,
      target: 1,
      rate: 0,
      bytes: 0,
      ticks: 0,
      lastRead: now,
      read: (n: number) => {
        e.bytes += n;
        this.counters.reads++;
        e.lastRead = this.clock.monotonic();
        // After a release: the held bytes are read, the stream goes on under its mark.
        if (e.mark < e.target) this.set(e, e.target);
      },
      remove: () => {
        if (!this.sockets.delete(e)) return;
        if (this.sockets.size === 0) {
          this.timer?.cancel();
          this.timer = null;
        }
      },
    };
    this.sockets.add(e);
    if (!this.timer) {
      this.lastTick = now;
      this.timer = this.clock.setInterval(() => this.tick(), TICK_MS);
    }
    return e;
  }

  private tick(): void {
    const now = this.clock.monotonic();
    const dt = Math.max(1, now - this.lastTick);
    this.lastTick = now;
    for (const e of this.sockets) {
      const sample = e.bytes / dt;
      const fresh = e.bytes > 0;
      e.rate = e.ticks === 0 ? sample : e.rate + (sample - e.rate) * RATE_WEIGHT;
      e.bytes = 0;
      e.ticks++;
      if (e.mark > 1 && now - e.lastRead >= RELEASE_MS) {
        this.set(e, 1);
        this.counters.releases++;
        continue;
      }
      // Raised only while bytes flow: a quiet socket stays released.
      if (!fresh || e.ticks < WARM_TICKS) continue;
      let target = Math.min(MAX_MARK, Math.floor(e.rate * HOLD_MS));
      if (target < MIN_MARK) target = 1;
      if (Math.abs(target - e.target) <= e.target * HYSTERESIS) continue;
      e.target = target;
      this.set(e, target);
    }
  }

  private set(e: Entry, bytes: number): void {
    const fd = e.fdOf();
    if (fd < 0) {
      e.remove();
      return;
    }
    try {
      this.setMark(fd, bytes);
      e.mark = bytes;
      this.counters.marksSet++;
    } catch {
      // The socket failed under us (EBADF): stop touching it.
      this.counters.errors++;
      e.remove();
    }
  }
}

const shared = new WeakMap<Clock, RecvLowWater>();

/** The process's one RecvLowWater for a clock. */
export function recvLowWaterOf(clock: Clock): RecvLowWater {
  let r = shared.get(clock);
  if (!r) {
    r = new RecvLowWater(clock);
    shared.set(clock, r);
  }
  return r;
}
