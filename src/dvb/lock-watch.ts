// When to re-tune: a pure policy fed the frontend's lock at each status poll. Lock lost for
// `retuneAfterMs` asks for a re-tune, then again after a doubling backoff up to `backoffMaxMs`;
// lock back resets it. The driver carries the decisions out (src/drivers/dvb-adapter/).

export interface LockPolicy {
  /** How long a lost lock may come back by itself before the first re-tune. */
  retuneAfterMs: number;
  backoffMinMs: number;
  backoffMaxMs: number;
}

/** A lost lock is given 2 s, then re-tuned at once and again 1 s, 2 s, 4 s … (at most 30 s)
 *  after each re-tune: at 2, 3, 5, 9, 17, 33, 63 s after the loss (docs/dvb.md). */
export const DEFAULT_LOCK_POLICY: LockPolicy = {
  retuneAfterMs: 2000,
  backoffMinMs: 1000,
  backoffMaxMs: 30_000,
};

export type LockEvent = 'locked' | 'lost' | 'retune' | null;

export class LockWatch {
  /** Lock as of the last poll; undefined before the first. */
  locked: boolean | undefined;
  lockChanges = 0;
  retunes = 0;
  private nextRetuneAt = 0;
  private backoffMs: number;

  constructor(private readonly policy: LockPolicy = DEFAULT_LOCK_POLICY) {
    this.backoffMs = policy.backoffMinMs;
  }

  /** The lock read at `now` (ms, monotonic) and what to do about it. A tuning that never
   *  locked counts as lost from its first poll. */
  feed(lock: boolean, now: number): LockEvent {
    const was = this.locked;
    this.locked = lock;
    if (lock) {
      this.backoffMs = this.policy.backoffMinMs;
      if (was === true) return null;
      if (was === false) this.lockChanges++;
      return 'locked';
    }
    if (was !== false) {
      if (was === true) this.lockChanges++;
      this.nextRetuneAt = now + this.policy.retuneAfterMs;
      return 'lost';
    }
    if (now < this.nextRetuneAt) return null;
    this.retunes++;
    this.nextRetuneAt = now + this.backoffMs;
    this.backoffMs = Math.min(this.backoffMs * 2, this.policy.backoffMaxMs);
    return 'retune';
  }

  /** A fresh tuning (config change, device reopened): the count of changes stays. */
  reset(): void {
    this.locked = undefined;
    this.backoffMs = this.policy.backoffMinMs;
  }
}
