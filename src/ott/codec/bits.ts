// Bit reader for codec headers (SPS, VUI): big-endian bits and Exp-Golomb codes, over an RBSP
// with emulation-prevention bytes already removed.

export class BitReader {
  private pos = 0;
  constructor(private b: Buffer) {}

  get bitsLeft(): number {
    return this.b.length * 8 - this.pos;
  }

  u(n: number): number {
    let v = 0;
    for (let i = 0; i < n; i++) {
      const byte = this.b[this.pos >> 3] ?? 0;
      v = v * 2 + ((byte >> (7 - (this.pos & 7))) & 1);
      this.pos++;
    }
    return v;
  }

  flag(): boolean {
    return this.u(1) === 1;
  }

  skip(n: number): void {
    this.pos += n;
  }

  /** Unsigned Exp-Golomb ue(v). */
  ue(): number {
    let zeros = 0;
    while (this.u(1) === 0 && zeros < 32 && this.bitsLeft > 0) zeros++;
    return 2 ** zeros - 1 + this.u(zeros);
  }

  /** Signed Exp-Golomb se(v). */
  se(): number {
    const k = this.ue();
    return k & 1 ? (k + 1) / 2 : -(k / 2);
  }
}

/** Remove emulation-prevention bytes (00 00 03 → 00 00) to get the RBSP of a NAL unit. */
export function unescapeRbsp(nal: Buffer): Buffer {
  const out = Buffer.allocUnsafe(nal.length);
  let n = 0;
  let zeros = 0;
  for (const byte of nal) {
    if (zeros >= 2 && byte === 3) {
      zeros = 0;
      continue;
    }
    out[n++] = byte;
    zeros = byte === 0 ? zeros + 1 : 0;
  }
  return out.subarray(0, n);
}

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
