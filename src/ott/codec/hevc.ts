// HEVC access units: NAL types for random access (IDR/CRA/BLA), the SPS fields for playlists
// and the sample entry, and the hvcC box body (ISO/IEC 14496-15 8.3.3.1).
import { BitReader, skipSubLayers, unescapeRbsp } from '../../util/bits.ts';
import type { VideoParams } from './h264.ts';

export const HEVC_IRAP_FIRST = 16; // BLA_W_LP
export const HEVC_IRAP_LAST = 23; // reserved IRAP
export const HEVC_VPS = 32;
export const HEVC_SPS = 33;
export const HEVC_PPS = 34;
export const HEVC_AUD = 35;
const PROFILE_SPACE_LETTERS = ['', 'A', 'B', 'C'];

export function hevcNalType(nal: Buffer): number {
  return (nal[0]! >> 1) & 0x3f;
}

export function hevcIsRandomAccess(nals: Buffer[]): boolean {
  return nals.some((n) => {
    const t = hevcNalType(n);
    return t >= HEVC_IRAP_FIRST && t <= HEVC_IRAP_LAST;
  });
}

export interface HevcSps extends VideoParams {
  /** The 12 bytes of general profile_tier_level, copied into hvcC. */
  ptl: Buffer;
  chromaFormat: number;
  bitDepthLuma: number;
  bitDepthChroma: number;
  temporalLayers: number;
  temporalIdNested: boolean;
}

export function parseHevcSps(nal: Buffer): HevcSps {
  const rbsp = unescapeRbsp(nal.subarray(2));
  const r = new BitReader(rbsp);
  r.skip(4); // vps id
  const maxSubLayersMinus1 = r.u(3);
  const temporalIdNested = r.flag();
  const ptl = Buffer.from(rbsp.subarray(1, 13));
  r.skip(96); // general profile_tier_level
  skipSubLayers(r, maxSubLayersMinus1);
  r.ue(); // sps id
  const chromaFormat = r.ue();
  if (chromaFormat === 3) r.skip(1);
  let width = r.ue();
  let height = r.ue();
  if (r.flag()) {
    const subW = chromaFormat === 1 || chromaFormat === 2 ? 2 : 1;
    const subH = chromaFormat === 1 ? 2 : 1;
    const [l, rr, t, b] = [r.ue(), r.ue(), r.ue(), r.ue()];
    width -= subW * (l + rr);
    height -= subH * (t + b);
  }
  const bitDepthLuma = r.ue() + 8;
  const bitDepthChroma = r.ue() + 8;
  return {
    width,
    height,
    fps: 0,
    codec: hevcCodecString(ptl),
    ptl,
    chromaFormat,
    bitDepthLuma,
    bitDepthChroma,
    temporalLayers: maxSubLayersMinus1 + 1,
    temporalIdNested,
  };
}

/** RFC 6381 / ISO 14496-15 Annex E codec string, e.g. `hvc1.1.6.L93.B0`. */
export function hevcCodecString(ptl: Buffer): string {
  const space = PROFILE_SPACE_LETTERS[ptl[0]! >> 6]!;
  const tier = (ptl[0]! >> 5) & 1 ? 'H' : 'L';
  const profile = ptl[0]! & 0x1f;
  const compat = ptl.readUInt32BE(1);
  let reversed = 0;
  for (let i = 0; i < 32; i++) if (compat & (1 << i)) reversed |= 1 << (31 - i);
  const constraints = [...ptl.subarray(5, 11)];
  while (constraints.length > 0 && constraints[constraints.length - 1] === 0) constraints.pop();
  const cons = constraints.map((c) => c.toString(16).toUpperCase()).join('.');
  const base = `hvc1.${space}${profile}.${(reversed >>> 0).toString(16).toUpperCase()}.${tier}${ptl[11]}`;
  return cons ? `${base}.${cons}` : base;
}

export function hvcC(vps: Buffer[], sps: Buffer[], pps: Buffer[], info: HevcSps): Buffer {
  const head = Buffer.alloc(23);
  head[0] = 1;
  info.ptl.copy(head, 1); // profile space/tier/idc, compat flags, constraints, level
  head.writeUInt16BE(0xf000, 13); // min_spatial_segmentation_idc = 0
  head[15] = 0xfc; // parallelismType unknown
  head[16] = 0xfc | info.chromaFormat;
  head[17] = 0xf8 | (info.bitDepthLuma - 8);
  head[18] = 0xf8 | (info.bitDepthChroma - 8);
  head.writeUInt16BE(0, 19); // avgFrameRate unspecified
  head[21] = ((info.temporalLayers & 7) << 3) | ((info.temporalIdNested ? 1 : 0) << 2) | 3;
  head[22] = 3; // numOfArrays
  const parts: Buffer[] = [head];
  for (const [type, list] of [
    [HEVC_VPS, vps],
    [HEVC_SPS, sps],
    [HEVC_PPS, pps],
  ] as const) {
    const h = Buffer.alloc(3);
    h[0] = 0x80 | type; // array_completeness
    h.writeUInt16BE(list.length, 1);
    parts.push(h);
    for (const nal of list) {
      const l = Buffer.alloc(2);
      l.writeUInt16BE(nal.length);
      parts.push(l, nal);
    }
  }
  return Buffer.concat(parts);
}
