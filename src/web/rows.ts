// One line of the streams page: the few figures a row shows, cheap to read for 1,000 streams
// every second, and the per-field difference between two sweeps (what the events stream sends).

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
  switches: number;
  tags: string[];
}

/** The fields of `next` that differ from `prev`, with its key; undefined when none do. */
export function rowChange(
  prev: StreamRow | undefined,
  next: StreamRow,
): Partial<StreamRow> | undefined {
  if (!prev) return next;
  const out: Partial<StreamRow> & { key: string } = { key: next.key };
  let changed = false;
  for (const k of Object.keys(next) as (keyof StreamRow)[]) {
    const a = prev[k];
    const b = next[k];
    const same = Array.isArray(a) && Array.isArray(b) ? a.join('\n') === b.join('\n') : a === b;
    if (!same) {
      (out as Record<string, unknown>)[k] = b;
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
