// stream_type values of PMT entries (ISO/IEC 13818-1 Table 2-34 and later amendments) that the
// server recognises, and which of them carry video.

export const STREAM_TYPE_MPEG1_VIDEO = 0x01;
export const STREAM_TYPE_MPEG2_VIDEO = 0x02;
export const STREAM_TYPE_MPEG1_AUDIO = 0x03;
export const STREAM_TYPE_MPEG2_AUDIO = 0x04;
/** PES private data: what it is comes from the descriptors (AC-3, teletext, subtitles …). */
export const STREAM_TYPE_PRIVATE_PES = 0x06;
export const STREAM_TYPE_AAC_ADTS = 0x0f;
export const STREAM_TYPE_MPEG4_VIDEO = 0x10;
export const STREAM_TYPE_H264 = 0x1b;
export const STREAM_TYPE_H264_MVC = 0x20;
export const STREAM_TYPE_HEVC = 0x24;
export const STREAM_TYPE_VVC = 0x33;
export const STREAM_TYPE_AVS = 0x42;
/** AC-3 in System A (ATSC) streams. */
export const STREAM_TYPE_ATSC_AC3 = 0x81;
export const STREAM_TYPE_VC1 = 0xea;

const VIDEO_STREAM_TYPES = new Set([
  STREAM_TYPE_MPEG1_VIDEO,
  STREAM_TYPE_MPEG2_VIDEO,
  STREAM_TYPE_MPEG4_VIDEO,
  STREAM_TYPE_H264,
  STREAM_TYPE_H264_MVC,
  STREAM_TYPE_HEVC,
  STREAM_TYPE_VVC,
  STREAM_TYPE_AVS,
  STREAM_TYPE_VC1,
]);

export function isVideoStreamType(streamType: number): boolean {
  return VIDEO_STREAM_TYPES.has(streamType);
}
