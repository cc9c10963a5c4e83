// One line of the streams page and of the adapters page: the few figures a row shows, cheap to
// read for 1,000 streams every second, and the per-field difference between two sweeps (what
// the events stream sends).

/** A stream as the dashboard's list shows it. Bit rates in kbit/s. */
export interface StreamRow {
  key: string;
  id: number;
  name: string;
  title: string;
  state: string;
  message?: string;
  /** Index of the active input, and how many inputs there are. */
  active: number;
  inputs: number;
  in: number;
  out: number;
  /** TR 101 290 priority 1 and 2 error totals of the active input, and its CC errors. */
  p1: number;
  p2: number;
  cc: number;
  /** The same counted over the last minute (src/web/recent.ts): what the list colours. */
  p1m?: number;
  p2m?: number;
  ccm?: number;
  switches: number;
  tags: string[];
}

/** A tuner adapter as the dashboard's adapters page lists it (src/drivers/dvb-adapter/). */
export interface AdapterRow {
  key: string;
  id: number;
  name: string;
  /** Delivery system (spec 1's `type`: the kernel's SYS_* numbers) and mode (0 stream,
   *  1 scanner, 2 monitor). */
  type: number;
  mode: number;
  state: string;
  message?: string;
  lock: boolean;
  /** dBm, dB, ratio, blocks; null when the frontend does not report them. */
  signal: number | null;
  snr: number | null;
  ber: number | null;
  unc: number | null;
  /** kHz (a satellite's MHz × 1000); null when unknown. `intermediate`: the LNB's IF, which is
   *  all a monitor reads back from a satellite frontend. */
  frequency: number | null;
  intermediate: boolean;
  /** A scanner's scan (`''`: none yet, `scanning`, `done`, `stopped`), transponders and
   *  services found so far. */
  scan: string;
  transponders: number;
  services: number;
  /** Keys of the running streams that read the adapter (dvb inputs, demuxers with src 1). */
  streams: string[];
}

/** What every row has: a key, and maybe a message. */
interface Row {
  key: string;
  message?: string;
}

/** The fields of `next` that differ from `prev`, with its key; undefined when none do. */
export function rowChange<R extends Row>(prev: R | undefined, next: R): Partial<R> | undefined {
  if (!prev) return next;
  const out = { key: next.key } as Partial<R> & Row;
  let changed = false;
  for (const k of Object.keys(next) as (keyof R)[]) {
    const a = prev[k];
    const b = next[k];
    const same = Array.isArray(a) && Array.isArray(b) ? a.join('\n') === b.join('\n') : a === b;
    if (!same) {
      out[k] = b;
      changed = true;
    }
  }
  // A message that went away is sent as an empty one, so the client drops it.
  if (prev.message !== undefined && next.message === undefined) {
    out.message = '';
    changed = true;
  }
  return changed ? out : undefined;
}

/** bit/s to the whole kbit/s a row shows. */
export function kbps(bitsPerSecond: number): number {
  return Math.round(bitsPerSecond / 1000);
}
