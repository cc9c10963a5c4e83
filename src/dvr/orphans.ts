// Orphan scan: walks a storage directory and deletes the files the index does not account for
// (chunks of a crashed write, rows removed before their unlink, stray temp files), skipping
// files younger than a minute, which a write may still be moving into place.
import type { Dir } from 'node:fs';
import { opendir, rmdir, stat, unlink } from 'node:fs/promises';
import { join, relative } from 'node:path';
import { type ArchiveIndex, INDEX_FILE } from './index-db.ts';
import { ORPHAN_MIN_AGE_MS } from './settings.ts';

/** Files of the storage that are not archive data: the index and its WAL, the probe file, the
 *  lock file (never removed: the lock is on its inode). */
export const PROBE_FILE = '.sluice-probe';
export const LOCK_FILE = '.sluice-lock';
const RESERVED = new Set([
  INDEX_FILE,
  `${INDEX_FILE}-wal`,
  `${INDEX_FILE}-shm`,
  PROBE_FILE,
  LOCK_FILE,
]);
/** Directory entries read per system call: a directory of 90,000 files is never held (nor
 *  turned into objects) in one piece on the event loop. */
const READ_BATCH = 128;
/** Longest stretch of synchronous work (index look-ups) before the scan yields to requests. */
const SLICE_MS = 4;

export interface OrphanResult {
  scanned: number;
  deleted: number;
  freedBytes: number;
}

export async function scanOrphans(
  dir: string,
  index: ArchiveIndex,
  now: number,
  minAgeMs = ORPHAN_MIN_AGE_MS,
  /** Checked at every yield: true ends the scan there (the storage closed its index). */
  stop: () => boolean = () => false,
): Promise<OrphanResult> {
  const res: OrphanResult = { scanned: 0, deleted: 0, freedBytes: 0 };
  try {
    await walk(dir, dir, index, now, minAgeMs, res, true, new Slicer(stop));
  } catch (err) {
    if (!(err instanceof ScanStopped)) throw err;
  }
  return res;
}

class ScanStopped extends Error {}

/** Yields to the event loop once the scan has run SLICE_MS without doing so. */
class Slicer {
  private since = performance.now();

  constructor(private stop: () => boolean) {}

  async pace(): Promise<void> {
    if (performance.now() - this.since < SLICE_MS) return;
    await new Promise((r) => setImmediate(r));
    this.since = performance.now();
    if (this.stop()) throw new ScanStopped('orphan scan stopped');
  }
}

async function walk(
  root: string,
  dir: string,
  index: ArchiveIndex,
  now: number,
  minAgeMs: number,
  res: OrphanResult,
  top: boolean,
  slicer: Slicer,
): Promise<boolean> {
  let entries: Dir;
  try {
    entries = await opendir(dir, { bufferSize: READ_BATCH });
  } catch {
    return false;
  }
  let kept = 0;
  for await (const e of entries) {
    await slicer.pace();
    const full = join(dir, e.name);
    if (top && RESERVED.has(e.name)) {
      kept++;
      continue;
    }
    if (e.isDirectory()) {
      const empty = await walk(root, full, index, now, minAgeMs, res, false, slicer);
      if (empty) {
        try {
          const st = await stat(full);
          if (now - st.mtimeMs >= minAgeMs) {
            await rmdir(full);
            continue;
          }
        } catch {
          // Raced with a writer creating a file in it: keep it.
        }
      }
      kept++;
      continue;
    }
    if (!e.isFile()) {
      kept++;
      continue;
    }
    res.scanned++;
    const rel = relative(root, full);
    if (index.knowsPath(rel)) {
      kept++;
      continue;
    }
    try {
      const st = await stat(full);
      if (now - st.mtimeMs < minAgeMs) {
        kept++;
        continue;
      }
      // Re-check: the file may have been indexed while we were stat-ing it.
      if (index.knowsPath(rel)) {
        kept++;
        continue;
      }
      await unlink(full);
      res.deleted++;
      res.freedBytes += st.size;
    } catch {
      kept++;
    }
  }
  return kept === 0 && !top;
}
