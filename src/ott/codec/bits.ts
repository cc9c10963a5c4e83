// Annex B helpers for codec headers; the bit reader itself is src/util/bits.ts.

/** Split an Annex B byte stream into NAL units (start codes removed). The start codes are
 *  found with Buffer.indexOf (native search), not a byte loop: slices are most of the bytes. */
export function splitAnnexB(b: Buffer): Buffer[] {
  const nals: Buffer[] = [];
  let start = nextStartCode(b, 0);
  while (start >= 0 && start < b.length) {
    const next = nextStartCode(b, start);
    let end = next < 0 ? b.length : next - 3;
    while (end > start && b[end - 1] === 0) end--;
    nals.push(b.subarray(start, end));
    start = next;
  }
  return nals;
}

/**
 * The NAL units in front of the first VCL NAL unit, and that one's first bytes (its header),
 * without scanning the slice data: what key-frame detection and parameter capture read when
 * the sample itself is not needed. `isVcl` tells a VCL NAL unit from its first byte.
 */
export function leadingNals(b: Buffer, isVcl: (firstByte: number) => boolean): Buffer[] {
  const nals: Buffer[] = [];
  const n = b.length;
  let start = nextStartCode(b, 0);
  while (start >= 0 && start < n) {
    if (isVcl(b[start]!)) {
      nals.push(b.subarray(start, Math.min(n, start + VCL_HEADER_BYTES)));
      break;
    }
    const next = nextStartCode(b, start);
    let end = next < 0 ? n : next - 3;
    while (end > start && b[end - 1] === 0) end--;
    nals.push(b.subarray(start, end));
    start = next;
  }
  return nals;
}

/** Bytes of a VCL NAL unit kept by `leadingNals` (header plus the start of the slice header). */
const VCL_HEADER_BYTES = 8;

const START_CODE = Buffer.from([0, 0, 1]);

/** Index just past the next 00 00 01 at or after `from`, or -1. */
function nextStartCode(b: Buffer, from: number): number {
  const at = b.indexOf(START_CODE, from);
  return at < 0 ? -1 : at + 3;
}
