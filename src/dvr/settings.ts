// The storage record and the stream's archive members as the DVR reads them (the storage
// record's defaults and limits come from its schema), and the DVR's own fixed timings.
import type { StorageApplied } from '../config/spec-types.generated.ts';
import { num } from '../config/spec-values.ts';

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

/** A `storage` record (validated, defaults applied: the schema's minimums hold) as the
 *  archive reads it. */
export function readStorage(spec: StorageApplied): StorageSettings {
  return {
    id: spec.id,
    name: spec.name,
    dirPath: spec['dir-path'],
    maxUsage: spec['max-usage'],
    cleanupIntervalSec: spec['cleanup-interval-sec'],
    graceSec: spec['disk-pressure-grace-sec'],
    cutSec: spec['disk-pressure-cut-sec'],
    emergencyBytes: spec['disk-emergency-bytes'],
    hysteresis: spec['alarm-disk-full-hysteresis'],
    note: spec.note,
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
