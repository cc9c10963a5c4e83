// How many frames an H.264 or HEVC stream may show out of decoding order (its reorder depth),
// read from the sequence parameter set, no I/O. H.264: the VUI's max_num_reorder_frames when
// bitstream_restriction is written (x264 writes it), else 0 for profiles
// that cannot have B-frames (Baseline, the intra profiles), else unknown. HEVC: the SPS's
// sps_max_num_reorder_pics of the highest sub-layer (always present). Used to give RTP video,
// which carries presentation times only, decoding times (src/protocols/rtp/dts.ts).
import { BitReader, skipScalingList, skipSubLayers, unescapeRbsp } from '../../util/bits.ts';

const H264_NAL_SPS = 7;
const HEVC_NAL_SPS = 33;
/** Profiles whose SPS carries chroma format, bit depths and scaling matrices (7.3.2.1.1). */
const H264_HIGH_PROFILES = new Set([100, 110, 122, 244, 44, 83, 86, 118, 128, 138, 139, 134, 135]);
const H264_BASELINE = 66;
const H264_CAVLC444_INTRA = 44;
/** The most a depth can be: the DPB holds at most 16 frames. */
export const MAX_REORDER_DEPTH = 16;

/** The reorder depth an SPS NAL unit (header byte(s) included) declares, or undefined when it
 *  does not say (or is not an SPS, or is malformed). */
export function reorderDepthOfSps(codec: 'h264' | 'hevc', nal: Uint8Array): number | undefined {
  try {
    const n = codec === 'h264' ? h264(nal) : hevc(nal);
    return n === undefined ? undefined : Math.min(n, MAX_REORDER_DEPTH);
  } catch {
    return undefined;
  }
}

/** The SPS NAL units of an Annex B access unit (or of a list of parameter sets). */
export function spsOf(codec: 'h264' | 'hevc', nals: Uint8Array[]): Uint8Array[] {
  return nals.filter((n) => n.length > 2 && nalType(codec, n[0]!) === spsType(codec));
}

/** The NAL units of an Annex B access unit that come before its first slice (where parameter
 *  sets are); the slice data is not scanned. */
export function leadingNalsOf(codec: 'h264' | 'hevc', au: Buffer): Buffer[] {
  const out: Buffer[] = [];
  let at = nextStart(au, 0);
  while (at >= 0 && at < au.length) {
    if (isVcl(codec, au[at]!)) break;
    const next = nextStart(au, at);
    let end = next < 0 ? au.length : next - 3;
    while (end > at && au[end - 1] === 0) end--;
    out.push(au.subarray(at, end));
    at = next;
  }
  return out;
}

function nalType(codec: 'h264' | 'hevc', first: number): number {
  return codec === 'h264' ? first & 0x1f : (first >> 1) & 0x3f;
}

function spsType(codec: 'h264' | 'hevc'): number {
  return codec === 'h264' ? H264_NAL_SPS : HEVC_NAL_SPS;
}

function isVcl(codec: 'h264' | 'hevc', first: number): boolean {
  const t = nalType(codec, first);
  return codec === 'h264' ? t >= 1 && t <= 5 : t < 32;
}

const START = Buffer.from([0, 0, 1]);

function nextStart(b: Buffer, from: number): number {
  const at = b.indexOf(START, from);
  return at < 0 ? -1 : at + 3;
}

function h264(nal: Uint8Array): number | undefined {
  if ((nal[0]! & 0x1f) !== H264_NAL_SPS) return undefined;
  const r = new BitReader(unescapeRbsp(Buffer.from(nal.subarray(1))));
  const profile = r.u(8);
  const constraints = r.u(8);
  r.skip(8); // level_idc
  r.ue(); // seq_parameter_set_id
  if (H264_HIGH_PROFILES.has(profile)) {
    const chroma = r.ue();
    if (chroma === 3) r.skip(1);
    r.ue(); // bit_depth_luma_minus8
    r.ue(); // bit_depth_chroma_minus8
    r.skip(1);
    if (r.flag()) {
      for (let i = 0; i < (chroma === 3 ? 12 : 8); i++) {
        if (r.flag()) skipScalingList(r, i < 6 ? 16 : 64);
      }
    }
  }
  r.ue(); // log2_max_frame_num_minus4
  const pocType = r.ue();
  if (pocType === 0) r.ue();
  else if (pocType === 1) {
    r.skip(1);
    r.se();
    r.se();
    const n = r.ue();
    if (n > 255) return undefined;
    for (let i = 0; i < n; i++) r.se();
  }
  r.ue(); // max_num_ref_frames
  r.skip(1);
  r.ue(); // pic_width_in_mbs_minus1
  r.ue(); // pic_height_in_map_units_minus1
  if (!r.flag()) r.skip(1); // frame_mbs_only_flag, mb_adaptive_frame_field_flag
  r.skip(1); // direct_8x8_inference_flag
  if (r.flag()) for (let i = 0; i < 4; i++) r.ue(); // frame cropping
  const fromVui = r.flag() ? vuiReorder(r) : undefined;
  if (fromVui !== undefined) return fromVui;
  // No bitstream_restriction: Baseline has no B slices; constraint_set3 on the High profiles
  // means an intra profile (A.2.8–A.2.11).
  if (profile === H264_BASELINE || profile === H264_CAVLC444_INTRA) return 0;
  if ((constraints & 0x10) !== 0 && [100, 110, 122, 244].includes(profile)) return 0;
  return undefined;
}

/** E.1.1 vui_parameters() up to max_num_reorder_frames. */
function vuiReorder(r: BitReader): number | undefined {
  if (r.flag() && r.u(8) === 255) r.skip(32); // aspect ratio, extended SAR
  if (r.flag()) r.skip(1); // overscan
  if (r.flag()) {
    r.skip(4); // video_format, video_full_range_flag
    if (r.flag()) r.skip(24); // colour description
  }
  if (r.flag()) {
    r.ue();
    r.ue(); // chroma sample location
  }
  if (r.flag()) r.skip(65); // num_units_in_tick, time_scale, fixed_frame_rate_flag
  const nalHrd = r.flag();
  if (nalHrd) hrd(r);
  const vclHrd = r.flag();
  if (vclHrd) hrd(r);
  if (nalHrd || vclHrd) r.skip(1); // low_delay_hrd_flag
  r.skip(1); // pic_struct_present_flag
  if (!r.flag()) return undefined; // bitstream_restriction_flag
  r.skip(1); // motion_vectors_over_pic_boundaries_flag
  for (let i = 0; i < 4; i++) r.ue(); // max bytes/bits denominators, log2 max mv lengths
  const reorder = r.ue();
  if (r.bitsLeft < 0) return undefined;
  return reorder;
}

/** E.1.2 hrd_parameters(). */
function hrd(r: BitReader): void {
  const cpbCount = r.ue() + 1;
  if (cpbCount > 32) throw new Error('cpb_cnt_minus1 out of range');
  r.skip(8); // bit_rate_scale, cpb_size_scale
  for (let i = 0; i < cpbCount; i++) {
    r.ue();
    r.ue();
    r.skip(1);
  }
  r.skip(20); // four length fields
}

/** 7.3.2.2 seq_parameter_set_rbsp() up to sps_max_num_reorder_pics. */
function hevc(nal: Uint8Array): number | undefined {
  if (((nal[0]! >> 1) & 0x3f) !== HEVC_NAL_SPS) return undefined;
  const r = new BitReader(unescapeRbsp(Buffer.from(nal.subarray(2))));
  r.skip(4); // sps_video_parameter_set_id
  const maxSubLayersMinus1 = r.u(3);
  r.skip(1); // temporal_id_nesting
  r.skip(96); // general profile, tier, level
  skipSubLayers(r, maxSubLayersMinus1);
  r.ue(); // sps_seq_parameter_set_id
  if (r.ue() === 3) r.skip(1); // chroma_format_idc, separate_colour_plane_flag
  r.ue(); // width
  r.ue(); // height
  if (r.flag()) for (let i = 0; i < 4; i++) r.ue(); // conformance window
  r.ue(); // bit_depth_luma_minus8
  r.ue(); // bit_depth_chroma_minus8
  r.ue(); // log2_max_pic_order_cnt_lsb_minus4
  const allLayers = r.flag(); // sps_sub_layer_ordering_info_present_flag
  let reorder = 0;
  for (let i = allLayers ? 0 : maxSubLayersMinus1; i <= maxSubLayersMinus1; i++) {
    r.ue(); // sps_max_dec_pic_buffering_minus1
    reorder = r.ue(); // sps_max_num_reorder_pics: the highest sub-layer's is kept
    r.ue(); // sps_max_latency_increase_plus1
  }
  if (r.bitsLeft < 0) return undefined;
  return reorder;
}
