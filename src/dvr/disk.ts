// Disk figures of a storage directory from statfs(2), behind an interface so tests can inject
// figures (and the cleanup logic never reads the real disk in unit tests).
import { statfs } from 'node:fs/promises';

export interface DiskFigures {
  total: number;
  /** Bytes available to this process (f_bavail). */
  free: number;
  /** total − f_bfree: what the file system counts as used. */
  used: number;
}

export type DiskProbe = (dir: string) => Promise<DiskFigures>;

export const statfsProbe: DiskProbe = async (dir) => {
  const s = await statfs(dir);
  const total = s.blocks * s.bsize;
  return { total, free: s.bavail * s.bsize, used: total - s.bfree * s.bsize };
};

export function usedPercent(d: DiskFigures): number {
  return d.total > 0 ? (d.used / d.total) * 100 : 0;
}
