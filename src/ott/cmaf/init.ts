// Initialisation segment (init.mp4) of one CMAF track: ftyp + moov. One writer per box,
// assembled bottom-up; the sample entry (avc1, hvc1, mp4a, ac-3) comes from sample-entry.ts.
import { box, fullBox, packLanguage, UNITY_MATRIX, u16, u32, zeros } from './box.ts';

export const TRACK_ID = 1;
const MAJOR_BRAND = 'iso6';
const COMPATIBLE_BRANDS = ['iso6', 'cmfc', 'mp41', 'dash', 'msix'];
const VOLUME_FULL = 0x0100;
const FIXED_16_16 = 0x10000;
const TKHD_ENABLED_IN_MOVIE = 0x000003;

export interface InitTrack {
  kind: 'video' | 'audio';
  timescale: number;
  language?: string;
  width?: number;
  height?: number;
  /** The stsd entry box (avc1/hvc1/mp4a/ac-3). */
  sampleEntry: Buffer;
}

export function ftyp(): Buffer {
  return box(
    'ftyp',
    Buffer.from(MAJOR_BRAND, 'latin1'),
    u32(0),
    ...COMPATIBLE_BRANDS.map((b) => Buffer.from(b, 'latin1')),
  );
}

export function mvhd(timescale: number): Buffer {
  return fullBox(
    'mvhd',
    0,
    0,
    u32(0), // creation
    u32(0), // modification
    u32(timescale),
    u32(0), // duration: fragmented
    u32(FIXED_16_16), // rate 1.0
    u16(VOLUME_FULL),
    zeros(10),
    UNITY_MATRIX,
    zeros(24), // pre_defined
    u32(TRACK_ID + 1), // next_track_ID
  );
}

export function tkhd(t: InitTrack): Buffer {
  return fullBox(
    'tkhd',
    0,
    TKHD_ENABLED_IN_MOVIE,
    u32(0),
    u32(0),
    u32(TRACK_ID),
    u32(0),
    u32(0), // duration
    zeros(8),
    u16(0), // layer
    u16(0), // alternate group
    u16(t.kind === 'audio' ? VOLUME_FULL : 0),
    u16(0),
    UNITY_MATRIX,
    u32((t.width ?? 0) * FIXED_16_16),
    u32((t.height ?? 0) * FIXED_16_16),
  );
}

export function mdhd(t: InitTrack): Buffer {
  return fullBox(
    'mdhd',
    0,
    0,
    u32(0),
    u32(0),
    u32(t.timescale),
    u32(0),
    u16(packLanguage(t.language)),
    u16(0),
  );
}

export function hdlr(kind: 'video' | 'audio'): Buffer {
  const name = kind === 'video' ? 'VideoHandler' : 'SoundHandler';
  return fullBox(
    'hdlr',
    0,
    0,
    u32(0),
    Buffer.from(kind === 'video' ? 'vide' : 'soun', 'latin1'),
    zeros(12),
    Buffer.from(`${name}\0`, 'latin1'),
  );
}

export function vmhd(): Buffer {
  return fullBox('vmhd', 0, 1, zeros(8));
}

export function smhd(): Buffer {
  return fullBox('smhd', 0, 0, u16(0), u16(0));
}

export function dinf(): Buffer {
  const url = fullBox('url ', 0, 1); // media in the same file
  return box('dinf', fullBox('dref', 0, 0, u32(1), url));
}

/** Empty sample tables: every sample of a fragmented file lives in moof/trun. */
export function stbl(sampleEntry: Buffer): Buffer {
  return box(
    'stbl',
    fullBox('stsd', 0, 0, u32(1), sampleEntry),
    fullBox('stts', 0, 0, u32(0)),
    fullBox('stsc', 0, 0, u32(0)),
    fullBox('stsz', 0, 0, u32(0), u32(0)),
    fullBox('stco', 0, 0, u32(0)),
  );
}

export function minf(t: InitTrack): Buffer {
  return box('minf', t.kind === 'video' ? vmhd() : smhd(), dinf(), stbl(t.sampleEntry));
}

export function mdia(t: InitTrack): Buffer {
  return box('mdia', mdhd(t), hdlr(t.kind), minf(t));
}

export function trak(t: InitTrack): Buffer {
  return box('trak', tkhd(t), mdia(t));
}

export function trex(): Buffer {
  return fullBox('trex', 0, 0, u32(TRACK_ID), u32(1), u32(0), u32(0), u32(0));
}

export function mvex(): Buffer {
  return box('mvex', trex());
}

export function moov(t: InitTrack): Buffer {
  return box('moov', mvhd(t.timescale), trak(t), mvex());
}

export function initSegment(t: InitTrack): Buffer {
  return Buffer.concat([ftyp(), moov(t)]);
}
