// The demux filter of a tuner adapter (docs/dvb.md, "Demux filters"), pure: the whole TS, or only
// the PIDs its readers need — the DVB SI tables, the PMTs and the elementary and PCR PIDs of
// the programmes they read — when that list is known and short enough to be cheaper.
import type { Pmt } from '../mpegts/psi.ts';

/** PAT, CAT, NIT, SDT/BAT, EIT, TDT/TOT (EN 300 468 5.1.3): always in a per-PID filter. */
export const SI_PIDS = [0x00, 0x01, 0x10, 0x11, 0x12, 0x14] as const;
/** A per-PID filter holds at most this many PIDs; more take the whole TS. Hardware demuxes run
 *  out of PID filters around 32 (many have 32 feeds, some fewer), and past a handful of
 *  programmes most of a multiplex is wanted anyway, so the whole TS costs no more. */
export const MAX_FILTER_PIDS = 16;

export type FilterChoice = { whole: true; reason: string } | { whole: false; pids: number[] };

export interface FilterInputs {
  /** The programmes the readers need, or null when one reads the whole TS. */
  readers: ReadonlySet<number> | null;
  /** Programmes whose PMT is wanted though nobody reads them (the CAM's `cam-pnr`). */
  pmtOnly: readonly number[];
  /** programme number → PMT PID, from the PAT; null before the PAT is seen. */
  pat: ReadonlyMap<number, number> | null;
  /** The latest PMT of each programme seen. */
  pmts: ReadonlyMap<number, Pmt>;
  /** False when the adapter itself needs the whole TS (T2-MI). */
  perPidAllowed: boolean;
}

export function chooseFilter(i: FilterInputs): FilterChoice {
  if (!i.perPidAllowed) return { whole: true, reason: 'T2-MI reads the whole TS' };
  if (i.readers === null) return { whole: true, reason: 'a reader takes the whole TS' };
  if (!i.pat) return { whole: true, reason: 'the PAT is not known yet' };
  const pids = new Set<number>(SI_PIDS);
  for (const pnr of i.pmtOnly) {
    const pmtPid = i.pat.get(pnr);
    if (pmtPid !== undefined) pids.add(pmtPid);
  }
  for (const pnr of i.readers) {
    const pmtPid = i.pat.get(pnr);
    // A programme not in the PAT has nothing to carry until it appears there.
    if (pmtPid === undefined) continue;
    pids.add(pmtPid);
    const pmt = i.pmts.get(pnr);
    if (!pmt) return { whole: true, reason: `the PMT of programme ${pnr} is not known yet` };
    pids.add(pmt.pcrPid);
    for (const s of pmt.streams) pids.add(s.pid);
  }
  // 0x1FFF as PCR PID means "no PCR" (13818-1 2.4.4.9).
  pids.delete(0x1fff);
  if (pids.size > MAX_FILTER_PIDS)
    return { whole: true, reason: `${pids.size} PIDs needed, more than ${MAX_FILTER_PIDS}` };
  return { whole: false, pids: [...pids].sort((a, b) => a - b) };
}
