// A recording stand-in for the reconcile loop's config side (plan / submit / reportInvalid),
// for tests of the config sources that do not need drivers running.
import type { DesiredSink } from '../../src/config/service.ts';
import type { ConfigIssue, DesiredState } from '../../src/config/types.ts';
import type { Plan } from '../../src/reconciler/types.ts';

export const EMPTY_PLAN: Plan = {
  changes: [],
  errors: [],
  warnings: [],
  summary: { add: 0, change: 0, replace: 0, destroy: 0 },
};

export class RecordingSink implements DesiredSink {
  submits: Array<{ desired: DesiredState; origin: string }> = [];
  invalid: Array<{ origin: string; issues: ConfigIssue[] }> = [];
  private waiters: Array<() => void> = [];

  plan(): Plan {
    return structuredClone(EMPTY_PLAN);
  }

  submit(desired: DesiredState, origin: string): void {
    this.submits.push({ desired, origin });
    this.wake();
  }

  reportInvalid(origin: string, issues: ConfigIssue[]): void {
    this.invalid.push({ origin, issues });
    this.wake();
  }

  private wake(): void {
    const w = this.waiters;
    this.waiters = [];
    for (const fn of w) fn();
  }

  /** Resolve once `cond` holds, checked after every submit / report; bounded by `timeoutMs`. */
  async until(what: string, cond: () => boolean, timeoutMs = 5_000): Promise<void> {
    if (cond()) return;
    await new Promise<void>((resolve, reject) => {
      const timer = setTimeout(() => reject(new Error(`timed out waiting for ${what}`)), timeoutMs);
      const check = () => {
        if (cond()) {
          clearTimeout(timer);
          resolve();
        } else {
          this.waiters.push(check);
        }
      };
      this.waiters.push(check);
    });
  }
}
