// Disk figures of a storage directory from statfs(2), behind an interface so tests can inject
// figures (and the cleanup logic never reads the real disk in unit tests).
import { statfs } from 'node:fs/promises';

export interface DiskFigures {
  /** Capacity usable by the server: used + available (blocks reserved for root excluded). */
  total: number;
  /** Bytes available to this process (f_bavail). */
  free: number;
  /** Blocks in use (f_blocks − f_bfree): what the file system counts as used. */
  used: number;
}

export type DiskProbe = (dir: string) => Promise<DiskFigures>;

/**
 * Figures from a statfs result. Usage is computed like `df` (used / (used + available)):
 * on a file system with reserved blocks (ext4 keeps 5 % for root) a percentage of f_blocks
 * would read ~5 points low, so max-usage 96 could never trigger before a non-root server hits
 * ENOSPC. Total is therefore the usable capacity, not f_blocks.
 */
export function figuresOf(s: {
  blocks: number;
  bsize: number;
  bfree: number;
  bavail: number;
}): DiskFigures {
  const used = (s.blocks - s.bfree) * s.bsize;
  const free = s.bavail * s.bsize;
  return { total: used + free, free, used };
}

export const statfsProbe: DiskProbe = async (dir) => figuresOf(await statfs(dir));

export function usedPercent(d: DiskFigures): number {
  return d.total > 0 ? (d.used / d.total) * 100 : 0;
}
