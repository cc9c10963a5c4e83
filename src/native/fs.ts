// Files written whole or not at all, for the archive (native/fs/durable_write.cc).
import { addon } from './addon.ts';
import { argError, fromNative } from './errors.ts';

/**
 * Writes `data` to `<path>.tmp`, fsyncs it and renames it over `path`, in one thread-pool job:
 * afterwards the file exists whole under `path` or not at all (on failure the temp file is
 * removed). Rejects with a NativeError carrying the errno name and the failed system call.
 * The copy into the page cache runs one job at a time, process-wide; fsyncs run concurrently.
 * `data` must not change until the promise settles.
 */
export async function writeDurable(path: string, data: Buffer): Promise<void> {
  if (typeof path !== 'string' || path === '') throw argError('path must be a non-empty string');
  if (!Buffer.isBuffer(data)) throw argError('data must be a Buffer');
  try {
    await addon().writeDurable(path, data);
  } catch (err) {
    throw fromNative(err);
  }
}

/** The most writeDurable copies ever running at once in this process (1 by design). */
export function writeDurableStats(): { copiesMostAtOnce: number } {
  return addon().writeDurableStats();
}
