// FLV tag bodies as RTMP audio (8) and video (9) messages carry them (FLV 10.1 annex E, and
// enhanced RTMP v1 for HEVC: ExVideoTagHeader with FourCC). Pure: one message payload in,
// what it is out; a codec this build cannot carry is named, not guessed.

export type FlvVideoCodec = 'h264' | 'hevc';
export type FlvAudioCodec = 'aac' | 'mp3';

export interface FlvVideo {
  /** null: a codec not carried (`codecName` says which). */
  codec: FlvVideoCodec | null;
  codecName: string;
  /** config: decoder configuration record (avcC / hvcC); frame: length-prefixed NAL units;
   *  end: end of sequence; skip: a command or info frame, metadata, an empty body. */
  packet: 'config' | 'frame' | 'end' | 'skip';
  key: boolean;
  /** Composition time offset in ms (PTS − DTS). */
  cts: number;
  data: Buffer;
}

export interface FlvAudio {
  codec: FlvAudioCodec | null;
  codecName: string;
  /** config: AudioSpecificConfig; frame: one raw frame. */
  packet: 'config' | 'frame' | 'skip';
  data: Buffer;
}

export class FlvError extends Error {
  override name = 'FlvError';
}

const VIDEO_CODEC_NAMES: Record<number, string> = {
  1: 'JPEG',
  2: 'Sorenson H.263',
  3: 'Screen video',
  4: 'VP6',
  5: 'VP6 alpha',
  6: 'Screen video 2',
  7: 'H.264',
  12: 'HEVC',
};

const AUDIO_CODEC_NAMES: Record<number, string> = {
  0: 'linear PCM',
  1: 'ADPCM',
  2: 'MP3',
  3: 'linear PCM LE',
  4: 'Nellymoser 16 kHz',
  5: 'Nellymoser 8 kHz',
  6: 'Nellymoser',
  7: 'G.711 A-law',
  8: 'G.711 mu-law',
  9: 'enhanced audio',
  10: 'AAC',
  11: 'Speex',
  14: 'MP3 8 kHz',
  15: 'device-specific',
};

const FRAME_KEY = 1;
const FRAME_COMMAND = 5;
const EX_SEQUENCE_START = 0;
const EX_CODED_FRAMES = 1;
const EX_SEQUENCE_END = 2;
const EX_CODED_FRAMES_X = 3;

function si24(b: Buffer, p: number): number {
  const v = b.readUIntBE(p, 3);
  return v & 0x800000 ? v - 0x1000000 : v;
}

export function parseVideoTag(b: Buffer): FlvVideo {
  if (b.length === 0) return skip('empty');
  const b0 = b[0]!;
  if (b0 & 0x80) {
    // Enhanced RTMP: [1 isEx][3 frame type][4 packet type] FourCC
    const frameType = (b0 >> 4) & 0x07;
    const packetType = b0 & 0x0f;
    if (b.length < 5) throw new FlvError('video tag truncated');
    const fourcc = b.toString('latin1', 1, 5);
    const codec: FlvVideoCodec | null =
      fourcc === 'hvc1' ? 'hevc' : fourcc === 'avc1' ? 'h264' : null;
    const base = { codec, codecName: fourcc, key: frameType === FRAME_KEY, cts: 0 };
    if (frameType === FRAME_COMMAND) return { ...base, packet: 'skip', data: b.subarray(5) };
    switch (packetType) {
      case EX_SEQUENCE_START:
        return { ...base, packet: 'config', data: b.subarray(5) };
      case EX_CODED_FRAMES:
        if (b.length < 8) throw new FlvError('video tag truncated');
        return { ...base, packet: 'frame', cts: si24(b, 5), data: b.subarray(8) };
      case EX_CODED_FRAMES_X:
        return { ...base, packet: 'frame', data: b.subarray(5) };
      case EX_SEQUENCE_END:
        return { ...base, packet: 'end', data: b.subarray(5) };
      default:
        return { ...base, packet: 'skip', data: b.subarray(5) };
    }
  }
  const frameType = b0 >> 4;
  const codecId = b0 & 0x0f;
  const codecName = VIDEO_CODEC_NAMES[codecId] ?? `video codec id ${codecId}`;
  const codec: FlvVideoCodec | null = codecId === 7 ? 'h264' : codecId === 12 ? 'hevc' : null;
  if (!codec) return { codec, codecName, packet: 'skip', key: false, cts: 0, data: b };
  if (frameType === FRAME_COMMAND) {
    return { codec, codecName, packet: 'skip', key: false, cts: 0, data: b.subarray(1) };
  }
  if (b.length < 5) throw new FlvError('video tag truncated');
  const pt = b[1]!;
  const packet = pt === 0 ? 'config' : pt === 1 ? 'frame' : pt === 2 ? 'end' : 'skip';
  return {
    codec,
    codecName,
    packet,
    key: frameType === FRAME_KEY,
    cts: si24(b, 2),
    data: b.subarray(5),
  };
}

export function parseAudioTag(b: Buffer): FlvAudio {
  if (b.length === 0) return { codec: null, codecName: 'empty', packet: 'skip', data: b };
  const format = b[0]! >> 4;
  const codecName = AUDIO_CODEC_NAMES[format] ?? `audio format ${format}`;
  if (format === 10) {
    if (b.length < 2) throw new FlvError('audio tag truncated');
    return {
      codec: 'aac',
      codecName,
      packet: b[1] === 0 ? 'config' : 'frame',
      data: b.subarray(2),
    };
  }
  if (format === 2 || format === 14) {
    return { codec: 'mp3', codecName, packet: 'frame', data: b.subarray(1) };
  }
  return { codec: null, codecName, packet: 'skip', data: b.subarray(1) };
}

function skip(codecName: string): FlvVideo {
  return { codec: null, codecName, packet: 'skip', key: false, cts: 0, data: Buffer.alloc(0) };
}
