// Start-up reconciliation of the index with the files: the newest chunks of every track (the
// only ones an interrupted write can concern) are checked on disk and rows whose file is gone
// are dropped. Files without a row are the orphan scan's business (they are deleted, never
// re-indexed: their timing is not known any more).
import { stat } from 'node:fs/promises';
import { join } from 'node:path';
import type { ArchiveIndex, ChunkRow } from './index-db.ts';

/** Newest chunks checked per track at start-up. */
export const RECONCILE_TAIL = 32;

export interface ReconcileResult {
  /** Per stream: rows checked and rows without a file (already removed from the index). */
  streams: Map<string, { checked: number; removed: ChunkRow[] }>;
}

async function exists(path: string): Promise<boolean> {
  try {
    await stat(path);
    return true;
  } catch {
    return false;
  }
}

export async function reconcileTail(
  dir: string,
  index: ArchiveIndex,
  tail = RECONCILE_TAIL,
): Promise<ReconcileResult> {
  const out: ReconcileResult = { streams: new Map() };
  for (const { stream, track } of index.streamTracks()) {
    const entry = out.streams.get(stream) ?? { checked: 0, removed: [] };
    out.streams.set(stream, entry);
    for (const row of index.newest(stream, track, tail)) {
      entry.checked++;
      if (!(await exists(join(dir, row.path)))) entry.removed.push(row);
    }
  }
  const gone = [...out.streams.values()].flatMap((s) => s.removed);
  if (gone.length > 0) index.deleteMany(gone.map((r) => r.id));
  return out;
}
