// What the recorders wrote into each storage per stream since the server started, over
// recorders that come and go (a stream restarted or moved to another storage): /metrics reads
// it as counters, which must never go back.
import type { RecorderStats, StreamRecorder } from './recorder.ts';

export type RecorderTotals = Omit<RecorderStats, 'lastWriteAt'>;
export interface RecorderTotalsRow extends RecorderTotals {
  storage: number;
  stream: string;
}

const open = new Set<StreamRecorder>();
/** By storage id and stream: the counts of recorders already closed. */
const closed = new Map<string, RecorderTotalsRow>();

function keyOf(storage: number, stream: string): string {
  return `${storage}\u0000${stream}`;
}

function add(to: RecorderTotals, s: RecorderTotals): void {
  to.chunks += s.chunks;
  to.bytes += s.bytes;
  to.dropped += s.dropped;
  to.failed += s.failed;
}

/** The row of `storage` and `stream` in `rows`, made at zero when missing. */
function rowIn(rows: Map<string, RecorderTotalsRow>, storage: number, stream: string) {
  const k = keyOf(storage, stream);
  let row = rows.get(k);
  if (!row) {
    row = { storage, stream, chunks: 0, bytes: 0, dropped: 0, failed: 0 };
    rows.set(k, row);
  }
  return row;
}

export function recorderOpened(r: StreamRecorder): void {
  open.add(r);
}

/** Call once the recorder counts no more (its queue written or dropped). */
export function recorderClosed(r: StreamRecorder): void {
  if (!open.delete(r)) return;
  add(rowIn(closed, r.storage.id, r.stream), r.stats);
}

/** Totals per storage and stream, of the pairs `keep` says still exist (the others are
 *  forgotten for good once no open recorder writes for them). */
export function recorderTotals(
  keep: (storage: number, stream: string) => boolean,
): RecorderTotalsRow[] {
  const rows = new Map<string, RecorderTotalsRow>();
  for (const [k, row] of closed) {
    if (keep(row.storage, row.stream)) rows.set(k, { ...row });
    else closed.delete(k);
  }
  for (const r of open) {
    const storage = r.storage.id;
    if (keep(storage, r.stream)) add(rowIn(rows, storage, r.stream), r.stats);
  }
  return [...rows.values()];
}
