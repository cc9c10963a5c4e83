// Orphan scan: walks a storage directory and deletes the files the index does not account for
// (chunks of a crashed write, rows removed before their unlink, stray temp files), skipping
// files younger than a minute, which a write may still be moving into place.
import type { Dirent } from 'node:fs';
import { readdir, rmdir, stat, unlink } from 'node:fs/promises';
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
/** Yield to the event loop every this many files so a big scan never stalls requests. */
const YIELD_EVERY = 256;

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
): Promise<OrphanResult> {
  const res: OrphanResult = { scanned: 0, deleted: 0, freedBytes: 0 };
  await walk(dir, dir, index, now, minAgeMs, res, true);
  return res;
}

async function walk(
  root: string,
  dir: string,
  index: ArchiveIndex,
  now: number,
  minAgeMs: number,
  res: OrphanResult,
  top: boolean,
): Promise<boolean> {
  let entries: Dirent[];
  try {
    entries = await readdir(dir, { withFileTypes: true });
  } catch {
    return false;
  }
  let kept = 0;
  for (const e of entries) {
    const full = join(dir, e.name);
    if (top && RESERVED.has(e.name)) {
      kept++;
      continue;
    }
    if (e.isDirectory()) {
      const empty = await walk(root, full, index, now, minAgeMs, res, false);
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
    if (res.scanned % YIELD_EVERY === 0) await new Promise((r) => setImmediate(r));
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
