// The storage status record of spec 3 as served by GET /data/dvr-storage-list, with the
// per-stream storage-gap-percent and a forecast of when the disk reaches max-usage.
import { usedPercent } from './disk.ts';
import type { StreamTotals } from './index-db.ts';
import type { ArchiveStorage, StorageState } from './storage.ts';

export interface AttachedStreamStatus {
  name: string;
  active: boolean;
  'retention-hours': number;
  'archived-sec': number;
  'archived-bytes': number;
  /** Share of the archive's span without recording (0 = continuous). */
  'storage-gap-percent': number;
}

export interface StorageStatus {
  id: number;
  name: string;
  'dir-path': string;
  /** `ready`, `error` or `not-ready`: the spec's Ready / Error / Not Ready in the lowercase
   *  words every other state of the API uses (the same word `/data/status` shows). */
  state: StorageState;
  message: string;
  'total-bytes': number;
  'free-bytes': number;
  'used-bytes': number;
  'used-percent': number;
  'archived-bytes': number;
  'pressure-since-sec': number;
  'disk-full-alarm': boolean;
  'active-task': { name: string; 'running-sec': number };
  'last-cleanup': {
    'orphans-sec-ago': number | null;
    'orphans-deleted': number;
    'pressure-trim-sec-ago': number | null;
    'pressure-trim-freed-bytes': number;
  };
  'write-rate-bytes-per-sec': number;
  /** Seconds until usage reaches max-usage at the current write rate; null = not growing. */
  'full-forecast-sec': number | null;
  streams: AttachedStreamStatus[];
}

export function gapPercent(t: StreamTotals | undefined): number {
  if (!t || t.last <= t.first) return 0;
  const span = (t.last - t.first) / 1000;
  const gap = Math.max(0, span - t.seconds);
  return Math.round((gap / span) * 10_000) / 100;
}

function secAgo(now: number, at: number): number | null {
  return at > 0 ? Math.max(0, Math.round((now - at) / 1000)) : null;
}

export function writeRate(s: ArchiveStorage, now: number): number {
  const w = s.writes;
  if (w.length < 2) return 0;
  const span = (now - w[0]!.at) / 1000;
  let bytes = 0;
  for (const x of w.slice(1)) bytes += x.bytes;
  return span > 0 ? bytes / span : 0;
}

export function buildStatus(s: ArchiveStorage, now: number): StorageStatus {
  const totals = s.totals();
  const disk = s.disk;
  const rate = writeRate(s, now);
  let forecast: number | null = null;
  if (disk && rate > 0) {
    const limit = (s.settings.maxUsage / 100) * disk.total;
    forecast = Math.max(0, Math.round((limit - disk.used) / rate));
  }
  const names = new Set([...s.streams.keys()]);
  const streams: AttachedStreamStatus[] = [...names].sort().map((name) => {
    const a = s.streams.get(name)!;
    const t = totals.get(name);
    return {
      name,
      active: s.writable && a.active(),
      'retention-hours': a.settings.hours,
      'archived-sec': Math.round((t?.seconds ?? 0) * 1000) / 1000,
      'archived-bytes': t?.bytes ?? 0,
      'storage-gap-percent': gapPercent(t),
    };
  });
  let archived = 0;
  for (const st of streams) archived += st['archived-bytes'];
  const task = s.activeTaskReport();
  return {
    id: s.settings.id,
    name: s.settings.name,
    'dir-path': s.settings.dirPath,
    state: s.state,
    message: s.message,
    'total-bytes': disk?.total ?? 0,
    'free-bytes': disk?.free ?? 0,
    'used-bytes': disk?.used ?? 0,
    'used-percent': disk ? Math.round(usedPercent(disk) * 100) / 100 : 0,
    'archived-bytes': archived,
    'pressure-since-sec': Math.floor(s.pressureSince / 1000),
    'disk-full-alarm': s.alarm,
    'active-task': { name: task.name, 'running-sec': task.seconds },
    'last-cleanup': {
      'orphans-sec-ago': secAgo(now, s.last.orphansAt),
      'orphans-deleted': s.last.orphansDeleted,
      'pressure-trim-sec-ago': secAgo(now, s.last.trimAt),
      'pressure-trim-freed-bytes': s.last.trimFreedBytes,
    },
    'write-rate-bytes-per-sec': Math.round(rate),
    'full-forecast-sec': forecast,
    streams,
  };
}

/** Per stream recording into `s` now: seconds from the end of its newest indexed chunk to
 *  `now` (a segment's length plus the write and the index insert when all keeps up). */
export function indexLag(s: ArchiveStorage, now: number): { stream: string; seconds: number }[] {
  if (!s.writable) return [];
  const totals = s.totals();
  const out: { stream: string; seconds: number }[] = [];
  for (const [stream, a] of s.streams) {
    const t = totals.get(stream);
    if (a.active() && t && t.last > 0)
      out.push({ stream, seconds: Math.max(0, now - t.last) / 1000 });
  }
  return out;
}
