// Files written whole or not at all, for the archive (native/fs/durable_write.cc).
import { addon } from './addon.ts';
import { argError, fromNative } from './errors.ts';

/** Which path writeDurable's writes took, process-wide since start (docs/native.md). */
export interface WriteDurableStats {
  /** The most copies into the page cache ever running at once (1 by design). */
  copiesMostAtOnce: number;
  /** Writes whose whole pages went to the disk with O_DIRECT (their tail < 1 page buffered). */
  direct: number;
  /** Writes wholly through the page cache: short, unaligned memory, or no O_DIRECT. */
  buffered: number;
  /** Of `buffered`: aligned writes whose filesystem refuses O_DIRECT (now or before). */
  fallbacks: number;
  /** Bytes that skipped the page cache, and bytes copied into it. */
  directBytes: number;
  bufferedBytes: number;
  /** Filesystems that refused O_DIRECT once; this process does not ask them again. */
  refusedFilesystems: number;
}

export interface WriteDurableOptions {
  /** false: every byte through the page cache (benchmarks compare both). Default true. */
  direct?: boolean;
}

/**
 * Writes `data` to `<path>.tmp`, fsyncs it and renames it over `path`, in one thread-pool job:
 * afterwards the file exists whole under `path` or not at all (on failure the temp file is
 * removed). Rejects with a NativeError carrying the errno name and the failed system call.
 * When `data` starts on a page (a segment pool block) and the filesystem takes O_DIRECT, its
 * whole pages go to the disk from `data` itself, with no copy into the page cache; the rest is
 * copied, one job at a time process-wide; fsyncs and direct writes run concurrently.
 * `data` must not change until the promise settles.
 */
export async function writeDurable(
  path: string,
  data: Buffer,
  options: WriteDurableOptions = {},
): Promise<void> {
  if (typeof path !== 'string' || path === '') throw argError('path must be a non-empty string');
  if (!Buffer.isBuffer(data)) throw argError('data must be a Buffer');
  try {
    await addon().writeDurable(path, data, options.direct ?? true);
  } catch (err) {
    throw fromNative(err);
  }
}

/** Which path the writes took, and the most copies ever running at once. */
export function writeDurableStats(): WriteDurableStats {
  return addon().writeDurableStats();
}
