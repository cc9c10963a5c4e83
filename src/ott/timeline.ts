// 90 kHz timestamps: 33-bit MPEG clocks unwrapped onto one increasing line, the jump test that
// turns a timestamp leap into a discontinuity, and the difference of two readers' timestamps.

export const PTS_HZ = 90000;
export const PTS_WRAP = 2 ** 33;
/** A step larger than this (either way) between consecutive samples of a track is a splice. */
export const PTS_JUMP_LIMIT = 10 * PTS_HZ;

/** The value congruent to `raw` modulo 2^33 nearest to `reference`. */
export function unwrapPts(raw: number, reference: number): number {
  return raw + Math.round((reference - raw) / PTS_WRAP) * PTS_WRAP;
}

export function isJump(prev: number, next: number): boolean {
  return Math.abs(next - prev) > PTS_JUMP_LIMIT;
}

/** `a − b` for timestamps unwrapped by different readers (their lines may differ by whole
 *  wraps): the difference on the 2^33 circle, in (−2^32, 2^32]. */
export function ptsDiff(a: number, b: number): number {
  const d = (((a - b) % PTS_WRAP) + PTS_WRAP) % PTS_WRAP;
  return d > PTS_WRAP / 2 ? d - PTS_WRAP : d;
}
