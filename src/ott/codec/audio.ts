// Audio frame parsing for the packager: ADTS (AAC), AC-3 sync frames and MPEG-1/2 audio
// (Layer II) headers. Each parser splits a PES payload into frames and reports the
// parameters a sample entry and a CODECS attribute need.

export interface AudioFrame {
  data: Buffer;
  /** PCM samples the frame decodes to. */
  samples: number;
  /** Byte offset of the frame (its header) in the parsed buffer. */
  offset: number;
}

/** Frames found in a buffer; `rest` is where an incomplete last frame (or header) begins, to
 *  be joined with the next PES (frames may straddle PES boundaries); the buffer's length when
 *  nothing is left over. */
export interface ParsedAudio {
  frames: AudioFrame[];
  params?: AudioParams;
  rest: number;
}

export interface AudioParams {
  sampleRate: number;
  channels: number;
  codec: string;
  /** AAC AudioSpecificConfig (esds) or AC-3 dac3 body. */
  config?: Buffer;
  /** MPEG-4 object type indication for esds (0x40 AAC, 0x6B MPEG-1 audio). */
  oti?: number;
}

const ADTS_SAMPLE_RATES = [
  96000, 88200, 64000, 48000, 44100, 32000, 24000, 22050, 16000, 12000, 11025, 8000, 7350,
];
const AAC_FRAME_SAMPLES = 1024;
const AC3_FRAME_SAMPLES = 1536;
const AC3_SAMPLE_RATES = [48000, 44100, 32000];
/** AC-3 frame size in 16-bit words per frmsizecod pair, for 48/44.1/32 kHz (A/52 table 5.18). */
const AC3_FRAME_WORDS: number[][] = [
  [64, 69, 96],
  [80, 87, 120],
  [96, 104, 144],
  [112, 121, 168],
  [128, 139, 192],
  [160, 174, 240],
  [192, 208, 288],
  [224, 243, 336],
  [256, 278, 384],
  [320, 348, 480],
  [384, 417, 576],
  [448, 487, 672],
  [512, 557, 768],
  [640, 696, 960],
  [768, 835, 1152],
  [896, 975, 1344],
  [1024, 1114, 1536],
  [1152, 1253, 1728],
  [1280, 1393, 1920],
];
const AC3_ACMOD_CHANNELS = [2, 1, 2, 3, 3, 4, 4, 5];
const MPA_SAMPLE_RATES = [44100, 48000, 32000];
const MPA_BITRATES_L2 = [0, 32, 48, 56, 64, 80, 96, 112, 128, 160, 192, 224, 256, 320, 384];
const MPA_BITRATES_L3 = [0, 32, 40, 48, 56, 64, 80, 96, 112, 128, 160, 192, 224, 256, 320];
const MPA_BITRATES_V2 = [0, 8, 16, 24, 32, 40, 48, 56, 64, 80, 96, 112, 128, 144, 160];
const MPA_LAYER_SAMPLES = 1152;
export const OTI_AAC = 0x40;
export const OTI_MPEG1_AUDIO = 0x6b;
export const OTI_MPEG2_AUDIO = 0x69;

export function parseAdts(b: Buffer): ParsedAudio {
  const frames: AudioFrame[] = [];
  let params: AudioParams | undefined;
  let o = 0;
  let rest = -1;
  while (rest < 0) {
    if (o + 7 > b.length) {
      rest = Math.min(o, b.length);
      break;
    }
    if (b[o] !== 0xff || (b[o + 1]! & 0xf6) !== 0xf0) {
      o++;
      continue;
    }
    const protectionAbsent = b[o + 1]! & 1;
    const profile = (b[o + 2]! >> 6) + 1; // audio object type
    const srIndex = (b[o + 2]! >> 2) & 0x0f;
    const channels = ((b[o + 2]! & 1) << 2) | (b[o + 3]! >> 6);
    const len = ((b[o + 3]! & 3) << 11) | (b[o + 4]! << 3) | (b[o + 5]! >> 5);
    const blocks = (b[o + 6]! & 3) + 1;
    const header = protectionAbsent ? 7 : 9;
    if (len < header) {
      o++;
      continue;
    }
    if (o + len > b.length) {
      rest = o;
      break;
    }
    frames.push({
      data: b.subarray(o + header, o + len),
      samples: AAC_FRAME_SAMPLES * blocks,
      offset: o,
    });
    if (!params) {
      const asc = Buffer.from([
        (profile << 3) | (srIndex >> 1),
        ((srIndex & 1) << 7) | (channels << 3),
      ]);
      params = {
        sampleRate: ADTS_SAMPLE_RATES[srIndex] ?? 48000,
        channels,
        codec: `mp4a.40.${profile}`,
        config: asc,
        oti: OTI_AAC,
      };
    }
    o += len;
  }
  return { frames, params, rest };
}

export function parseAc3(b: Buffer): ParsedAudio {
  const frames: AudioFrame[] = [];
  let params: AudioParams | undefined;
  let o = 0;
  let rest = -1;
  while (rest < 0) {
    if (o + 8 > b.length) {
      rest = Math.min(o, b.length);
      break;
    }
    if (b[o] !== 0x0b || b[o + 1] !== 0x77) {
      o++;
      continue;
    }
    const fscod = b[o + 4]! >> 6;
    const frmsizecod = b[o + 4]! & 0x3f;
    const words = AC3_FRAME_WORDS[frmsizecod >> 1]?.[fscod];
    if (!words) {
      o++;
      continue;
    }
    const len = (words + (fscod === 1 ? frmsizecod & 1 : 0)) * 2;
    if (o + len > b.length) {
      rest = o;
      break;
    }
    frames.push({ data: b.subarray(o, o + len), samples: AC3_FRAME_SAMPLES, offset: o });
    if (!params) params = ac3Params(b.subarray(o, o + 8), fscod, frmsizecod);
    o += len;
  }
  return { frames, params, rest };
}

function ac3Params(h: Buffer, fscod: number, frmsizecod: number): AudioParams {
  const bsid = h[5]! >> 3;
  const bsmod = h[5]! & 7;
  const acmod = h[6]! >> 5;
  // lfeon follows optional 2-bit fields whose presence depends on acmod (A/52 5.4.2).
  let bit = 3;
  if ((acmod & 1) !== 0 && acmod !== 1) bit += 2;
  if (acmod & 4) bit += 2;
  if (acmod === 2) bit += 2;
  const bits = (h[6]! << 8) | h[7]!;
  const lfeon = (bits >> (15 - bit)) & 1;
  // dac3 (ETSI TS 102 366 F.4): fscod 2, bsid 5, bsmod 3, acmod 3, lfeon 1, bit_rate_code 5, 5 reserved
  const v =
    (fscod << 22) |
    (bsid << 17) |
    (bsmod << 14) |
    (acmod << 11) |
    (lfeon << 10) |
    ((frmsizecod >> 1) << 5);
  const config = Buffer.from([(v >> 16) & 0xff, (v >> 8) & 0xff, v & 0xff]);
  return {
    sampleRate: AC3_SAMPLE_RATES[fscod] ?? 48000,
    channels: AC3_ACMOD_CHANNELS[acmod]! + lfeon,
    codec: 'ac-3',
    config,
  };
}

export function parseMpegAudio(b: Buffer): ParsedAudio {
  const frames: AudioFrame[] = [];
  let params: AudioParams | undefined;
  let o = 0;
  let rest = -1;
  while (rest < 0) {
    if (o + 4 > b.length) {
      rest = Math.min(o, b.length);
      break;
    }
    if (b[o] !== 0xff || (b[o + 1]! & 0xe0) !== 0xe0) {
      o++;
      continue;
    }
    const version = (b[o + 1]! >> 3) & 3; // 3 = MPEG-1, 2 = MPEG-2
    const layer = 4 - ((b[o + 1]! >> 1) & 3);
    const brIndex = b[o + 2]! >> 4;
    const srIndex = (b[o + 2]! >> 2) & 3;
    const padding = (b[o + 2]! >> 1) & 1;
    const mpeg1 = version === 3;
    const table = mpeg1 ? (layer === 3 ? MPA_BITRATES_L3 : MPA_BITRATES_L2) : MPA_BITRATES_V2;
    const kbps = table[brIndex] ?? 0;
    const sampleRate = (MPA_SAMPLE_RATES[srIndex] ?? 0) / (mpeg1 ? 1 : 2);
    if (!kbps || !sampleRate || layer < 2) {
      o++;
      continue;
    }
    const samples = mpeg1 || layer === 2 ? MPA_LAYER_SAMPLES : MPA_LAYER_SAMPLES / 2;
    const len = Math.floor(((samples / 8) * kbps * 1000) / sampleRate) + padding;
    if (o + len > b.length) {
      rest = o;
      break;
    }
    frames.push({ data: b.subarray(o, o + len), samples, offset: o });
    if (!params) {
      const channels = b[o + 3]! >> 6 === 3 ? 1 : 2;
      const oti = mpeg1 ? OTI_MPEG1_AUDIO : OTI_MPEG2_AUDIO;
      params = {
        sampleRate,
        channels,
        codec: layer === 3 ? 'mp4a.40.34' : `mp4a.${oti.toString(16).toUpperCase()}`,
        oti,
      };
    }
    o += len;
  }
  return { frames, params, rest };
}
