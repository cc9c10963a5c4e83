// The last applied state on disk, so `sluice reconcile --plan` can diff a config against what a
// stopped server last ran. Written atomically (temp file, fsync, rename, fsync of the directory).
import { closeSync, fsyncSync, openSync, readFileSync, renameSync, writeSync } from 'node:fs';
import { unlink } from 'node:fs/promises';
import { basename, dirname, join } from 'node:path';
import type { Resource } from '../config/types.ts';
import { resourceId } from '../config/types.ts';

export const STATE_FORMAT = 'sluice-state/1';
/** Default file name inside the data dir. */
export const STATE_FILE_NAME = 'applied-state.json';

export interface StateFileContent {
  format: typeof STATE_FORMAT;
  revision: string;
  origin: string;
  appliedAt: string;
  resources: Resource[];
}

let tmpSeq = 0;

export async function writeStateFile(path: string, content: StateFileContent): Promise<void> {
  const tmp = join(dirname(path), `.${basename(path)}.${process.pid}.${++tmpSeq}.tmp`);
  try {
    const fd = openSync(tmp, 'w', 0o600);
    try {
      writeSync(fd, `${JSON.stringify(content)}\n`);
      fsyncSync(fd);
    } finally {
      closeSync(fd);
    }
    renameSync(tmp, path);
  } catch (e) {
    await unlink(tmp).catch(() => {});
    throw e;
  }
  // The rename is durable only once the directory entry is on disk.
  try {
    const dfd = openSync(dirname(path), 'r');
    try {
      fsyncSync(dfd);
    } finally {
      closeSync(dfd);
    }
  } catch {
    // Some filesystems refuse fsync on a directory; the rename itself already happened.
  }
}

/** Resources of the last applied state; an absent file means nothing was applied yet. */
export function loadStateFile(path: string): Map<string, Resource> {
  let text: string;
  try {
    text = readFileSync(path, 'utf8');
  } catch (e) {
    if ((e as NodeJS.ErrnoException).code === 'ENOENT') return new Map();
    throw e;
  }
  const data = JSON.parse(text) as Partial<StateFileContent>;
  if (data.format !== STATE_FORMAT || !Array.isArray(data.resources)) {
    throw new Error(`${path}: not a sluice state file (format ${String(data.format)})`);
  }
  return new Map(data.resources.map((r) => [resourceId(r), r]));
}

/** Revision, origin and time of the state file, for `reconcile --plan` to say what it diffs. */
export function readStateFileInfo(
  path: string,
): Omit<StateFileContent, 'resources' | 'format'> | undefined {
  try {
    const data = JSON.parse(readFileSync(path, 'utf8')) as StateFileContent;
    return { revision: data.revision, origin: data.origin, appliedAt: data.appliedAt };
  } catch {
    return undefined;
  }
}
