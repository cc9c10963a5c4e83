// What the source programme of a transcoder carries, read from the PAT and the first PMT of the
// source stream's output: the encoder's argv depends on it (audio rules are per source codec,
// PIDs and programme number are kept).
import { PAT_PID, pid as pidOf, TS_PACKET_SIZE } from '../../mpegts/packet.ts';
import {
  PAT_TABLE_ID,
  PMT_TABLE_ID,
  type PmtStream,
  parseDescriptors,
  parsePat,
  parsePmt,
} from '../../mpegts/psi.ts';
import { SectionReader } from '../../mpegts/section-reader.ts';
import {
  isVideoStreamType,
  STREAM_TYPE_AAC_ADTS,
  STREAM_TYPE_ATSC_AC3,
  STREAM_TYPE_MPEG1_AUDIO,
  STREAM_TYPE_MPEG2_AUDIO,
  STREAM_TYPE_PRIVATE_PES,
} from '../../mpegts/stream-type.ts';
import type { AudioCodec, SourceProgramme } from './args.ts';

const STREAM_TYPE_AAC_LATM = 0x11;
const STREAM_TYPE_ATSC_EAC3 = 0x87;
const DESC_AC3 = 0x6a;
const DESC_EAC3 = 0x7a;
const DESC_TELETEXT = 0x56;
const DESC_SUBTITLING = 0x59;

/** A PMT entry as the encoder's rules see it. */
export function classify(s: PmtStream): 'video' | AudioCodec | 'subtitle' | 'data' {
  if (isVideoStreamType(s.streamType)) return 'video';
  switch (s.streamType) {
    case STREAM_TYPE_MPEG1_AUDIO:
    case STREAM_TYPE_MPEG2_AUDIO:
      return 'mpeg';
    case STREAM_TYPE_AAC_ADTS:
    case STREAM_TYPE_AAC_LATM:
      return 'aac';
    case STREAM_TYPE_ATSC_AC3:
      return 'ac3';
    case STREAM_TYPE_ATSC_EAC3:
      return 'other';
  }
  if (s.streamType !== STREAM_TYPE_PRIVATE_PES) return 'data';
  const tags = new Set(parseDescriptors(s.descriptors).map((d) => d.tag));
  if (tags.has(DESC_AC3)) return 'ac3';
  if (tags.has(DESC_EAC3)) return 'other';
  if (tags.has(DESC_SUBTITLING) || tags.has(DESC_TELETEXT)) return 'subtitle';
  return 'data';
}

/** The programme a PMT section describes (the first one of the PAT). */
export function programmeOf(pmtPid: number, section: Buffer): SourceProgramme {
  const pmt = parsePmt(section);
  const out: SourceProgramme = {
    programNumber: pmt.programNumber,
    pmtPid,
    audio: [],
    subtitles: [],
  };
  for (const s of pmt.streams) {
    const c = classify(s);
    if (c === 'video') out.videoPid ??= s.pid;
    else if (c === 'subtitle') out.subtitles.push(s.pid);
    else if (c !== 'data') out.audio.push({ pid: s.pid, codec: c });
  }
  return out;
}

/** Feeds on aligned packets; calls `found` with each new programme description (the first,
 *  then again when the PMT changes what it lists). */
export class ProgrammeProbe {
  private pmtPid = -1;
  private pmtReader: SectionReader | null = null;
  private last = '';
  /** The last PMT section read: the section reader hands a repeat on as this same copy. */
  private lastPmt: Buffer | null = null;
  private readonly patReader = new SectionReader((s) => {
    if (s[0] !== PAT_TABLE_ID) return;
    const first = parsePat(s).programs[0];
    if (!first || first.pid === this.pmtPid) return;
    this.pmtPid = first.pid;
    this.lastPmt = null;
    this.pmtReader = new SectionReader((p) => {
      // The same PMT again (it repeats ~10 times a second) is the same copy: no parse.
      if (p[0] !== PMT_TABLE_ID || p === this.lastPmt) return;
      this.lastPmt = p;
      const prog = programmeOf(this.pmtPid, p);
      const key = JSON.stringify(prog);
      if (key === this.last) return;
      this.last = key;
      this.found(prog);
    });
  });

  constructor(private readonly found: (p: SourceProgramme) => void) {}

  packets(buf: Buffer): void {
    for (let o = 0; o + TS_PACKET_SIZE <= buf.length; o += TS_PACKET_SIZE) {
      const p = pidOf(buf, o);
      if (p === PAT_PID) this.patReader.packet(buf, o);
      else if (p === this.pmtPid) this.pmtReader?.packet(buf, o);
    }
  }
}
