// The failover policy of a stream, as a pure decision over what the inputs report: leave an
// input that delivered no valid TS for `stream-timeout`, or whose priority-1 error rate stays
// above `failover-error-rate`; while on a backup, return to the primary at each check once it
// delivers valid TS at an acceptable error rate. The instance carries the decisions out.

export interface InputHealth {
  supported: boolean;
  /** Opened and not failed. */
  usable: boolean;
  /** ms since the input became active (probing: since it was opened), -1 when closed. */
  openFor: number;
  /** Valid TS within the stream timeout. */
  alive: boolean;
  /** Priority-1 errors/s over the error window; null = not judged yet. */
  errorRate: number | null;
}

export interface FailoverSettings {
  streamTimeoutMs: number;
  /** priority-1 errors/s; 0 = quality failover off. */
  errorRate: number;
}

export interface Decision {
  to: number;
  reason: string;
}

/** Next input after `from` that can be tried (cyclic); `from` itself when it is the only one. */
export function nextInput(inputs: InputHealth[], from: number): number {
  for (let k = 1; k <= inputs.length; k++) {
    const i = (from + k) % inputs.length;
    if (inputs[i]!.supported) return i;
  }
  return from;
}

function tooManyErrors(h: InputHealth, s: FailoverSettings): boolean {
  return s.errorRate > 0 && h.errorRate !== null && h.errorRate > s.errorRate;
}

/** Where to go from `from`: the first other input (cyclic) already delivering valid TS (a
 *  probed primary), else simply the next one, which then gets a whole stream-timeout. */
export function pickNext(inputs: InputHealth[], from: number): number {
  for (let k = 1; k < inputs.length; k++) {
    const i = (from + k) % inputs.length;
    const h = inputs[i]!;
    if (h.supported && h.usable && h.alive) return i;
  }
  return nextInput(inputs, from);
}

/** Called often (a few times a second): should the active input be left? */
export function checkActive(
  inputs: InputHealth[],
  active: number,
  s: FailoverSettings,
): Decision | null {
  const h = inputs[active];
  if (!h) return null;
  const to = pickNext(inputs, active);
  if (!h.supported || !h.usable) {
    return to === active ? null : { to, reason: 'input unusable' };
  }
  if (!h.alive && h.openFor >= s.streamTimeoutMs) {
    if (to === active) return null;
    return { to, reason: `no valid TS for ${s.streamTimeoutMs / 1000} s` };
  }
  if (tooManyErrors(h, s)) {
    if (to === active) return null;
    return { to, reason: `priority-1 errors ${h.errorRate!.toFixed(1)}/s above ${s.errorRate}/s` };
  }
  return null;
}

/** Called every `check-interval` while on a backup: is the primary good again? */
export function checkPrimary(
  inputs: InputHealth[],
  active: number,
  s: FailoverSettings,
): Decision | null {
  const p = inputs[0];
  if (active === 0 || !p || !p.supported || !p.usable || !p.alive) return null;
  if (tooManyErrors(p, s)) return null;
  return { to: 0, reason: 'primary delivers valid TS again' };
}
