// The storage record and the stream's archive members as the DVR reads them, with the spec's
// defaults (spec 1 storage record, spec 3 limits), and the DVR's own fixed timings.
import { num, str } from '../config/spec-values.ts';

export const DEFAULT_MAX_USAGE = 90;
export const DEFAULT_CLEANUP_INTERVAL_SEC = 10;
export const DEFAULT_GRACE_SEC = 60;
export const DEFAULT_CUT_SEC = 300;
export const DEFAULT_EMERGENCY_BYTES = 2 * 1024 ** 3;
export const DEFAULT_HYSTERESIS = 2;
export const DEFAULT_DVR_HOURS = 24;
export const MAX_DVR_HOURS = 2160;

/** Recovery from a low-space Error needs this many times the floor free (spec 3). */
export const RECOVERY_FACTOR = 2;
/** The orphan scan's first run after start, then its period. */
export const ORPHAN_FIRST_DELAY_MS = 15_000;
export const ORPHAN_PERIOD_MS = 3_600_000;
/** Orphan files younger than this are skipped (a write may be under way). */
export const ORPHAN_MIN_AGE_MS = 60_000;
/** Tasks shorter than this are not reported as the active task (spec 3). */
export const ACTIVE_TASK_MIN_MS = 2_000;
/** An archive session with no request for this long is closed and its protection released. */
export const SESSION_IDLE_MS = 120_000;
/** Two chunks further apart than this (beyond the first one's duration) are a gap. */
export const GAP_TOLERANCE_MS = 1_000;
/** Chunk starts per rendered playlist block (one hour keeps a live stream's churn to one). */
export const PLAYLIST_BLOCK_MS = 3_600_000;
export const HOUR_MS = 3_600_000;

export interface StorageSettings {
  id: number;
  name: string;
  dirPath: string;
  maxUsage: number;
  cleanupIntervalSec: number;
  graceSec: number;
  cutSec: number;
  emergencyBytes: number;
  hysteresis: number;
  note: string;
}

export function readStorage(spec: Record<string, unknown>): StorageSettings {
  return {
    id: num(spec, 'id', 0),
    name: str(spec, 'name'),
    dirPath: str(spec, 'dir-path'),
    maxUsage: num(spec, 'max-usage', DEFAULT_MAX_USAGE),
    cleanupIntervalSec: Math.max(
      1,
      num(spec, 'cleanup-interval-sec', DEFAULT_CLEANUP_INTERVAL_SEC),
    ),
    graceSec: Math.max(0, num(spec, 'disk-pressure-grace-sec', DEFAULT_GRACE_SEC)),
    cutSec: Math.max(1, num(spec, 'disk-pressure-cut-sec', DEFAULT_CUT_SEC)),
    emergencyBytes: Math.max(0, num(spec, 'disk-emergency-bytes', DEFAULT_EMERGENCY_BYTES)),
    hysteresis: Math.max(0, num(spec, 'alarm-disk-full-hysteresis', DEFAULT_HYSTERESIS)),
    note: str(spec, 'note'),
  };
}

/** A stream's archive binding (stream record members, spec 3). */
export interface StreamDvrSettings {
  storage: number;
  hours: number;
  minHours: number;
}

export function readStreamDvr(spec: Record<string, unknown>): StreamDvrSettings {
  return {
    storage: Math.max(0, Math.trunc(num(spec, 'dvr-storage', 0))),
    hours: Math.min(MAX_DVR_HOURS, Math.max(1, num(spec, 'dvr-hours', DEFAULT_DVR_HOURS))),
    minHours: Math.max(0, num(spec, 'dvr-min-hours', 0)),
  };
}
