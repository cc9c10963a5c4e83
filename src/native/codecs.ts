// Codec names for PMT stream types (ISO/IEC 13818-1 table 2-34, DVB EN 300 468 descriptors),
// spelled as ffprobe spells them so the two can be compared.
import type { RawStream } from './addon.ts';

export type StreamKind = 'video' | 'audio' | 'subtitle' | 'data';

const BY_TYPE: Record<number, [string, StreamKind]> = {
  1: ['mpeg1video', 'video'],
  2: ['mpeg2video', 'video'],
  // Layer I/II/III cannot be told apart from the PMT; broadcast audio is layer II.
  3: ['mp2', 'audio'],
  4: ['mp2', 'audio'],
  15: ['aac', 'audio'],
  16: ['mpeg4', 'video'],
  17: ['aac_latm', 'audio'],
  21: ['timed_id3', 'data'],
  27: ['h264', 'video'],
  28: ['aac', 'audio'],
  36: ['hevc', 'video'],
  45: ['mpegh_3d_audio', 'audio'],
  51: ['vvc', 'video'],
  66: ['cavs', 'video'],
  129: ['ac3', 'audio'],
  130: ['dts', 'audio'],
  134: ['scte_35', 'data'],
  135: ['eac3', 'audio'],
  209: ['dirac', 'video'],
  210: ['avs2', 'video'],
  234: ['vc1', 'video'],
};

// DVB descriptors that identify the content of a private (0x06) stream.
const BY_DESCRIPTOR: Record<number, [string, StreamKind]> = {
  86: ['dvb_teletext', 'subtitle'],
  89: ['dvb_subtitle', 'subtitle'],
  106: ['ac3', 'audio'],
  122: ['eac3', 'audio'],
  123: ['dts', 'audio'],
  124: ['aac', 'audio'],
};

// Registration descriptor (0x05) format identifiers.
const BY_REGISTRATION: Record<string, [string, StreamKind]> = {
  'AC-3': ['ac3', 'audio'],
  EAC3: ['eac3', 'audio'],
  HEVC: ['hevc', 'video'],
  Opus: ['opus', 'audio'],
  KLVA: ['klv', 'data'],
  'ID3 ': ['timed_id3', 'data'],
  'VC-1': ['vc1', 'video'],
  BSSD: ['s302m', 'audio'],
};

/** Codec name and kind of one PMT entry; `unknown`/`data` when nothing identifies it. */
export function codecOf(s: Pick<RawStream, 'streamType' | 'descriptors' | 'registration'>): {
  codec: string;
  kind: StreamKind;
} {
  if (s.streamType === 0x06 || s.streamType >= 0x80) {
    for (const tag of s.descriptors) {
      const hit = BY_DESCRIPTOR[tag];
      if (hit) return { codec: hit[0], kind: hit[1] };
    }
    const reg = BY_REGISTRATION[s.registration];
    if (reg) return { codec: reg[0], kind: reg[1] };
  }
  const byType = BY_TYPE[s.streamType];
  if (byType) return { codec: byType[0], kind: byType[1] };
  return { codec: s.streamType === 0x06 ? 'private' : 'unknown', kind: 'data' };
}
