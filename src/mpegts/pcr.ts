// PCR reading for the file input's real-time pacing.
import { AF_PCR, AFC_ADAPTATION, SYNC_BYTE } from './packet.ts';

/** The adaptation field must hold its flags byte and the 6-byte PCR. */
const MIN_AF_LENGTH_WITH_PCR = 7;

/** 27 MHz PCR ticks per millisecond. */
export const PCR_PER_MS = 27_000;

/** The PCR (27 MHz) carried by the TS packet at `o`, or -1 (no PCR, or no sync byte there). */
export function readPcr(p: Buffer, o: number): number {
  // Junk (a file that is not TS) must not be read as PCRs: they would defeat pacing.
  if (p[o] !== SYNC_BYTE) return -1;
  if ((p[o + 3]! & AFC_ADAPTATION) === 0 || p[o + 4]! < MIN_AF_LENGTH_WITH_PCR) return -1;
  if ((p[o + 5]! & AF_PCR) === 0) return -1;
  const b = o + 6;
  const base =
    p[b]! * 2 ** 25 + p[b + 1]! * 2 ** 17 + p[b + 2]! * 2 ** 9 + p[b + 3]! * 2 + (p[b + 4]! >> 7);
  const ext = ((p[b + 4]! & 0x01) << 8) | p[b + 5]!;
  return base * 300 + ext;
}

/** PCR values wrap at 2^33 × 300 (27 MHz ticks, about 26.5 hours). */
export const PCR_WRAP = 2 ** 33 * 300;

/** Overwrite the PCR of the packet at `o` (which carries one: readPcr ≥ 0) with `value`. */
export function writePcr(p: Buffer, o: number, value: number): void {
  const v = ((Math.round(value) % PCR_WRAP) + PCR_WRAP) % PCR_WRAP;
  const base = Math.floor(v / 300);
  const ext = v - base * 300;
  const b = o + 6;
  p[b] = Math.floor(base / 2 ** 25) & 0xff;
  p[b + 1] = Math.floor(base / 2 ** 17) & 0xff;
  p[b + 2] = Math.floor(base / 2 ** 9) & 0xff;
  p[b + 3] = Math.floor(base / 2) & 0xff;
  p[b + 4] = ((base % 2) << 7) | 0x7e | (ext >> 8);
  p[b + 5] = ext & 0xff;
}

/** `a − b` on the PCR circle, in (−PCR_WRAP/2, PCR_WRAP/2]. */
export function pcrDiff(a: number, b: number): number {
  const d = (((a - b) % PCR_WRAP) + PCR_WRAP) % PCR_WRAP;
  return d > PCR_WRAP / 2 ? d - PCR_WRAP : d;
}
