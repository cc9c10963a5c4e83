// Sample entries for stsd: avc1/hvc1 (visual) and mp4a/ac-3 (audio), with their decoder
// configuration boxes (avcC, hvcC, esds, dac3).
import { box, fullBox, u8, u16, u32, zeros } from './box.ts';

const DATA_REFERENCE_INDEX = 1;
const RESOLUTION_72DPI = 0x00480000;
const DEPTH_24 = 0x0018;
const ES_DESCRIPTOR_TAG = 0x03;
const DECODER_CONFIG_TAG = 0x04;
const DECODER_SPECIFIC_TAG = 0x05;
const SL_CONFIG_TAG = 0x06;
const STREAM_TYPE_AUDIO = 0x05;

function sampleEntryHeader(): Buffer {
  return Buffer.concat([zeros(6), u16(DATA_REFERENCE_INDEX)]);
}

export function visualSampleEntry(
  type: 'avc1' | 'hvc1',
  width: number,
  height: number,
  config: Buffer,
): Buffer {
  const configBox = box(type === 'avc1' ? 'avcC' : 'hvcC', config);
  return box(
    type,
    sampleEntryHeader(),
    zeros(16), // pre_defined + reserved
    u16(width),
    u16(height),
    u32(RESOLUTION_72DPI),
    u32(RESOLUTION_72DPI),
    u32(0),
    u16(1), // frame_count
    zeros(32), // compressor name
    u16(DEPTH_24),
    u16(0xffff), // pre_defined = -1
    configBox,
  );
}

function audioSampleEntry(
  type: string,
  channels: number,
  sampleRate: number,
  config: Buffer,
): Buffer {
  return box(
    type,
    sampleEntryHeader(),
    zeros(8),
    u16(channels),
    u16(16), // sample size
    zeros(4),
    u32(Math.min(sampleRate, 0xffff) * 0x10000),
    config,
  );
}

/** An MPEG-4 descriptor: tag, length (4-byte expandable form), body. */
function descriptor(tag: number, ...body: Buffer[]): Buffer {
  const payload = Buffer.concat(body);
  const n = payload.length;
  const len = Buffer.from([
    0x80 | ((n >> 21) & 0x7f),
    0x80 | ((n >> 14) & 0x7f),
    0x80 | ((n >> 7) & 0x7f),
    n & 0x7f,
  ]);
  return Buffer.concat([u8(tag), len, payload]);
}

export function esds(oti: number, specific: Buffer | undefined): Buffer {
  const decoderConfig = descriptor(
    DECODER_CONFIG_TAG,
    u8(oti),
    u8((STREAM_TYPE_AUDIO << 2) | 1),
    zeros(3), // buffer size
    u32(0), // max bitrate
    u32(0), // avg bitrate
    ...(specific ? [descriptor(DECODER_SPECIFIC_TAG, specific)] : []),
  );
  const es = descriptor(
    ES_DESCRIPTOR_TAG,
    u16(0),
    u8(0),
    decoderConfig,
    descriptor(SL_CONFIG_TAG, u8(2)),
  );
  return fullBox('esds', 0, 0, es);
}

export function mp4a(channels: number, sampleRate: number, oti: number, specific?: Buffer): Buffer {
  return audioSampleEntry('mp4a', channels, sampleRate, esds(oti, specific));
}

export function ac3Entry(channels: number, sampleRate: number, dac3: Buffer): Buffer {
  return audioSampleEntry('ac-3', channels, sampleRate, box('dac3', dac3));
}
