// The stream record members the packager reads, with their defaults (docs/ott.md).

export const OTT_OFF = 0;
export const OTT_HLS_TS = 1;
export const OTT_CMAF = 2;
export const OTT_BOTH = 3;
export const DEFAULT_SEGMENT_DURATION = 4;
export const DEFAULT_PART_DURATION = 0.5;
/**
 * Segments in a live window. More than six: an LL-HLS delta update (`_HLS_skip=YES`) may only
 * leave out segments older than CAN-SKIP-UNTIL, which is six target durations, so a window of
 * six segments of about one target each never has anything to skip; ten leave four.
 */
export const DEFAULT_WINDOW = 10;
/** Segments kept after they leave the playlist, for clients still fetching them. */
export const WINDOW_GRACE = 2;

export interface OttSettings {
  mode: number;
  ts: boolean;
  cmaf: boolean;
  webvtt: boolean;
  segmentDuration: number;
  partDuration: number;
  window: number;
}

function num(v: unknown, fallback: number, min: number): number {
  return typeof v === 'number' && Number.isFinite(v) && v >= min ? v : fallback;
}

export function readSettings(spec: Record<string, unknown>): OttSettings {
  const mode = num(spec['ott-hls'], OTT_OFF, 0);
  return {
    mode,
    ts: mode === OTT_HLS_TS || mode === OTT_BOTH,
    cmaf: mode === OTT_CMAF || mode === OTT_BOTH,
    webvtt: spec['ott-webvtt'] === true || spec['ott-webvtt'] === 1,
    segmentDuration: num(spec['ott-segment-duration'], DEFAULT_SEGMENT_DURATION, 0.1),
    partDuration: num(spec['ott-part-duration'], DEFAULT_PART_DURATION, 0.05),
    window: Math.round(num(spec['ott-window'], DEFAULT_WINDOW, 1)),
  };
}
