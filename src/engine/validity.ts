// When an input counts as delivering *valid* TS: aligned packets alone are not enough (a buffer
// of 0x47 bytes is perfectly aligned). The input must also carry a PAT and a PMT the PAT points
// to, both received recently (CRC checked by the native analyzer), with no TS_sync_loss lately.

import { PAT_TABLE_ID, PMT_TABLE_ID, parsePat, patPmtPids } from '../mpegts/psi.ts';
import type { Section } from '../native/ts.ts';

/**
 * PAT and PMT must both have arrived within this long. TR 101 290 wants each at least every
 * 0.5 s (PAT_error / PMT_error); four times that leaves room for arrival jitter and lax muxers
 * without keeping a source that lost its tables "valid" for long.
 */
export const PSI_FRESH_MS = 2000;
/** After a TS_sync_loss the input is not valid for this long (it must hold sync again). */
export const SYNC_HOLD_MS = 2000;

export type ValidityVerdict = 'valid' | 'no PAT' | 'no PMT' | 'sync loss';

export class TsValidity {
  private patAt = -1;
  private pmtPids = new Set<number>();
  private pmtAt = new Map<number, number>();
  private syncLosses = 0;
  private syncLossAt = -1;

  /** Sections (CRC already checked) taken from the analyzer at monotonic time `now`. */
  sections(list: readonly Section[], now: number): void {
    for (const s of list) {
      const d = s.data;
      if (d.length < 12 || (d[5]! & 1) === 0) continue; // not current (current_next 0)
      if (s.pid === 0 && s.tableId === PAT_TABLE_ID) {
        const pmts = patPmtPids(parsePat(d));
        if (pmts.size === 0) continue; // a PAT without programmes announces nothing to play
        this.patAt = now;
        if (!sameSet(pmts, this.pmtPids)) {
          this.pmtPids = pmts;
          for (const p of this.pmtAt.keys()) if (!pmts.has(p)) this.pmtAt.delete(p);
        }
      } else if (s.tableId === PMT_TABLE_ID && this.pmtPids.has(s.pid)) {
        this.pmtAt.set(s.pid, now);
      }
    }
  }

  /** The analyzer's TS_sync_loss counter as last read (a rise marks a sync loss now). */
  syncLossCount(count: number, now: number): void {
    if (count > this.syncLosses) this.syncLossAt = now;
    this.syncLosses = count;
  }

  verdict(now: number): ValidityVerdict {
    if (this.patAt < 0 || now - this.patAt > PSI_FRESH_MS) return 'no PAT';
    let pmt = false;
    for (const at of this.pmtAt.values()) if (now - at <= PSI_FRESH_MS) pmt = true;
    if (!pmt) return 'no PMT';
    if (this.syncLossAt >= 0 && now - this.syncLossAt <= SYNC_HOLD_MS) return 'sync loss';
    return 'valid';
  }
}

function sameSet(a: Set<number>, b: Set<number>): boolean {
  if (a.size !== b.size) return false;
  for (const x of a) if (!b.has(x)) return false;
  return true;
}
