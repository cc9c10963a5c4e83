// Bit reader for codec headers (SPS, VUI): big-endian bits and Exp-Golomb codes, over an RBSP
// with emulation-prevention bytes already removed. Shared by OTT packaging and the RTP inputs.

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

/** H.264 7.3.2.1.1.1 scaling_list(): read past one list of `size` deltas. */
export function skipScalingList(r: BitReader, size: number): void {
  let last = 8;
  let next = 8;
  for (let j = 0; j < size; j++) {
    if (next !== 0) next = (last + r.se() + 256) % 256;
    last = next === 0 ? last : next;
  }
}

/** HEVC 7.3.3 profile_tier_level(1, maxSubLayersMinus1) after the 96 general bits: read past
 *  the sub-layer flags, their alignment and the sub-layer profiles and levels. */
export function skipSubLayers(r: BitReader, maxSubLayersMinus1: number): void {
  const subProfile: boolean[] = [];
  const subLevel: boolean[] = [];
  for (let i = 0; i < maxSubLayersMinus1; i++) {
    subProfile.push(r.flag());
    subLevel.push(r.flag());
  }
  if (maxSubLayersMinus1 > 0) for (let i = maxSubLayersMinus1; i < 8; i++) r.skip(2);
  for (let i = 0; i < maxSubLayersMinus1; i++) {
    if (subProfile[i]) r.skip(88);
    if (subLevel[i]) r.skip(8);
  }
}
