// The alert rules as data: each rule's severity and what it watches, the mapping from a
// stream's alert keys (src/engine/alerts.ts) to rules, and the error-rate window of the
// tr101290-p1 and cc-errors rules.
import type { RuleId, Severity, SubjectKind } from './types.ts';

export interface RuleDef {
  severity: Severity;
  kind: SubjectKind;
  /** One line for docs/alerting.md and the status. */
  what: string;
}

export const RULES: Readonly<Record<RuleId, RuleDef>> = {
  'stream-down': { severity: 'critical', kind: 'stream', what: 'no valid TS on any input' },
  failover: { severity: 'warning', kind: 'stream', what: 'running on a backup input' },
  'input-fault': {
    severity: 'warning',
    kind: 'stream',
    what: 'an input failed, is of an unsupported type, or is above failover-error-rate',
  },
  'tr101290-p1': {
    severity: 'warning',
    kind: 'stream',
    what: 'priority-1 errors on the active input at or above tr101290-p1-rate',
  },
  'cc-errors': {
    severity: 'info',
    kind: 'stream',
    what: 'continuity errors on the active input at or above cc-error-rate',
  },
  scrambled: {
    severity: 'warning',
    kind: 'stream',
    what: 'scrambled packets on the active input of a stream that is not scrambled-channel',
  },
  'storage-error': { severity: 'critical', kind: 'storage', what: 'the storage is in Error' },
  'disk-full': {
    severity: 'critical',
    kind: 'storage',
    what: 'the disk-full alarm: usage above max-usage',
  },
  'storage-emergency': {
    severity: 'critical',
    kind: 'storage',
    what: 'free space below disk-emergency-bytes (emergency deletion)',
  },
  'epg-import': { severity: 'warning', kind: 'epg-source', what: 'the last import failed' },
  'adapter-lock': { severity: 'critical', kind: 'adapter', what: 'the tuner lost its lock' },
};

/** Keys the alerter reports into a stream's own alert gate (so that the stream's enable-alert
 *  and alert-delay damp them like the engine's own). */
export const P1_KEY = 'tr101290-p1';
export const CC_KEY = 'cc-errors';

/** The rule of a key of a stream's alert gate, or undefined for a key the alerter ignores. */
export function streamRule(key: string): RuleId | undefined {
  if (key === 'no-signal') return 'stream-down';
  if (key === 'backup-active') return 'failover';
  if (key === 'scrambled') return 'scrambled';
  if (key === P1_KEY) return 'tr101290-p1';
  if (key === CC_KEY) return 'cc-errors';
  if (/^input-\d+-(failed|unsupported|errors)$/.test(key)) return 'input-fault';
  return undefined;
}

/** Cumulative error counters of a stream's active input. */
export interface ErrorTotals {
  /** Index of the active input: the counters are that input's. */
  input: number;
  p1: number;
  cc: number;
}

/** Average rates over a sliding window of samples of cumulative counters. A change of active
 *  input or a counter that went down (input reopened) starts the window again. */
export class ErrorRateWindow {
  private samples: { mono: number; t: ErrorTotals }[] = [];

  add(mono: number, t: ErrorTotals, windowMs: number): void {
    const last = this.samples[this.samples.length - 1];
    if (last && (last.t.input !== t.input || t.p1 < last.t.p1 || t.cc < last.t.cc)) {
      this.samples = [];
    }
    this.samples.push({ mono, t });
    // Keep one sample at or before the window's start, so the span covers the whole window.
    while (this.samples.length > 2 && this.samples[1]!.mono <= mono - windowMs) {
      this.samples.shift();
    }
  }

  /** Errors per second over the window. A window not yet full counts as full (a burst in the
   *  first second is not a rate of the whole window); 0 until two samples exist. */
  rates(windowMs: number): { p1: number; cc: number } {
    const first = this.samples[0];
    const last = this.samples[this.samples.length - 1];
    if (!first || !last || last.mono <= first.mono) return { p1: 0, cc: 0 };
    const sec = Math.max(last.mono - first.mono, windowMs) / 1000;
    return { p1: (last.t.p1 - first.t.p1) / sec, cc: (last.t.cc - first.t.cc) / sec };
  }
}
