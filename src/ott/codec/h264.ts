// H.264 access units: NAL types that matter for segmenting (IDR, recovery point SEI), the SPS
// fields a playlist and an avcC need (profile, level, size, frame rate), and the avcC box body.
import { BitReader, skipScalingList, unescapeRbsp } from '../../util/bits.ts';

export const NAL_SLICE = 1;
export const NAL_IDR = 5;
export const NAL_SEI = 6;
export const NAL_SPS = 7;
export const NAL_PPS = 8;
export const NAL_AUD = 9;
const SEI_RECOVERY_POINT = 6;
/** Profiles whose SPS carries chroma format and scaling lists (7.3.2.1.1). */
const HIGH_PROFILES = new Set([100, 110, 122, 244, 44, 83, 86, 118, 128, 138, 139, 134, 135]);

export interface VideoParams {
  width: number;
  height: number;
  /** Frames per second from the VUI timing, 0 when absent. */
  fps: number;
  codec: string;
}

export function h264NalType(nal: Buffer): number {
  return nal[0]! & 0x1f;
}

/** True when the access unit can start a segment: an IDR slice or a recovery point SEI. */
export function h264IsRandomAccess(nals: Buffer[]): boolean {
  for (const nal of nals) {
    const t = h264NalType(nal);
    if (t === NAL_IDR) return true;
    if (t === NAL_SEI && nal[1] === SEI_RECOVERY_POINT) return true;
  }
  return false;
}

export function parseH264Sps(nal: Buffer): VideoParams {
  const r = new BitReader(unescapeRbsp(nal.subarray(1)));
  const profile = r.u(8);
  r.skip(8); // constraint flags
  r.skip(8); // level
  r.ue(); // sps id
  let chromaFormat = 1;
  if (HIGH_PROFILES.has(profile)) {
    chromaFormat = r.ue();
    if (chromaFormat === 3) r.skip(1);
    r.ue(); // bit depth luma
    r.ue(); // bit depth chroma
    r.skip(1);
    if (r.flag()) {
      const lists = chromaFormat === 3 ? 12 : 8;
      for (let i = 0; i < lists; i++) if (r.flag()) skipScalingList(r, i < 6 ? 16 : 64);
    }
  }
  r.ue(); // log2 max frame num
  const pocType = r.ue();
  if (pocType === 0) r.ue();
  else if (pocType === 1) {
    r.skip(1);
    r.se();
    r.se();
    const n = r.ue();
    for (let i = 0; i < n; i++) r.se();
  }
  r.ue(); // max ref frames
  r.skip(1);
  const mbW = r.ue() + 1;
  const mbH = r.ue() + 1;
  const frameMbsOnly = r.u(1);
  if (!frameMbsOnly) r.skip(1);
  r.skip(1); // direct 8x8
  let crop = [0, 0, 0, 0];
  if (r.flag()) crop = [r.ue(), r.ue(), r.ue(), r.ue()];
  const cropUnitX = chromaFormat === 0 || chromaFormat === 3 ? 1 : 2;
  const cropUnitY = (chromaFormat === 1 ? 2 : 1) * (2 - frameMbsOnly);
  const width = mbW * 16 - cropUnitX * (crop[0]! + crop[1]!);
  const height = (2 - frameMbsOnly) * mbH * 16 - cropUnitY * (crop[2]! + crop[3]!);
  let fps = 0;
  if (r.flag()) fps = vuiFrameRate(r);
  const hex = nal.subarray(1, 4).toString('hex');
  return { width, height, fps, codec: `avc1.${hex}` };
}

function vuiFrameRate(r: BitReader): number {
  if (r.flag()) {
    const idc = r.u(8);
    if (idc === 255) r.skip(32); // extended SAR
  }
  if (r.flag()) r.skip(1); // overscan
  if (r.flag()) {
    r.skip(4);
    if (r.flag()) r.skip(24);
  }
  if (r.flag()) {
    r.ue();
    r.ue();
  }
  if (!r.flag()) return 0;
  const units = r.u(32);
  const scale = r.u(32);
  return units > 0 ? scale / (2 * units) : 0;
}

/** AVCDecoderConfigurationRecord (ISO/IEC 14496-15 5.3.3.1). */
export function avcC(sps: Buffer[], pps: Buffer[]): Buffer {
  const first = sps[0]!;
  const parts: Buffer[] = [
    Buffer.from([1, first[1]!, first[2]!, first[3]!, 0xff, 0xe0 | sps.length]),
  ];
  for (const s of sps) parts.push(u16(s.length), s);
  parts.push(Buffer.from([pps.length]));
  for (const p of pps) parts.push(u16(p.length), p);
  return Buffer.concat(parts);
}

function u16(v: number): Buffer {
  const b = Buffer.alloc(2);
  b.writeUInt16BE(v);
  return b;
}
