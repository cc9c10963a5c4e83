// Audio-only and video-only streams (`stream-type` 1 and 2): the packets of every elementary
// stream of the other kinds are dropped and each PMT is rewritten without them. When the PCR
// travels on a dropped PID (audio-only from a stream whose PCR is on the video PID, the usual
// case), that PID keeps an adaptation-field-only packet for each PCR, so the programme keeps its
// clock. PAT, PMT and every other PID (SI tables, EMM/ECM) pass unchanged.
import {
  AF_DISCONTINUITY,
  AF_PCR,
  AFC_ADAPTATION,
  hasAdaptation,
  PAT_PID,
  payloadOffset,
  pid,
  pusi,
  SYNC_BYTE,
  TS_HEADER_SIZE,
  TS_PACKET_SIZE,
} from './packet.ts';
import {
  DESCRIPTOR_AC3,
  PAT_TABLE_ID,
  PMT_TABLE_ID,
  parseDescriptors,
  parsePat,
  parsePmt,
  pmtWithoutStreams,
  SECTION_PREFIX_SIZE,
  STUFFING_BYTE,
  sectionLength,
} from './psi.ts';
import {
  isVideoStreamType,
  STREAM_TYPE_AAC_ADTS,
  STREAM_TYPE_ATSC_AC3,
  STREAM_TYPE_MPEG1_AUDIO,
  STREAM_TYPE_MPEG2_AUDIO,
  STREAM_TYPE_PRIVATE_PES,
} from './stream-type.ts';

export type KeptKind = 'audio' | 'video';

/** AAC LATM, E-AC-3 (ATSC). */
const STREAM_TYPE_AAC_LATM = 0x11;
const STREAM_TYPE_ATSC_EAC3 = 0x87;
/** DVB descriptors that make a private PES audio: AC-3, enhanced AC-3, DTS, AAC. */
const AUDIO_DESCRIPTORS = new Set([DESCRIPTOR_AC3, 0x7a, 0x7b, 0x7c]);
const AUDIO_TYPES = new Set([
  STREAM_TYPE_MPEG1_AUDIO,
  STREAM_TYPE_MPEG2_AUDIO,
  STREAM_TYPE_AAC_ADTS,
  STREAM_TYPE_AAC_LATM,
  STREAM_TYPE_ATSC_AC3,
  STREAM_TYPE_ATSC_EAC3,
]);
/** PCR_flag and the 6 PCR bytes after the flags byte. */
const PCR_SIZE = 6;

/** The kind of an elementary stream as the PMT describes it. */
export function componentKind(streamType: number, descriptors: Buffer): KeptKind | 'other' {
  if (isVideoStreamType(streamType)) return 'video';
  if (AUDIO_TYPES.has(streamType)) return 'audio';
  if (streamType === STREAM_TYPE_PRIVATE_PES)
    for (const d of parseDescriptors(descriptors)) if (AUDIO_DESCRIPTORS.has(d.tag)) return 'audio';
  return 'other';
}

/** The whole section a packet starts, when it fits in that packet; undefined otherwise. */
function wholeSection(p: Buffer, tableId: number): Buffer | undefined {
  if (!pusi(p)) return undefined;
  const o = payloadOffset(p);
  if (o >= TS_PACKET_SIZE) return undefined;
  const at = o + 1 + p[o]!;
  if (at + SECTION_PREFIX_SIZE > TS_PACKET_SIZE || p[at] !== tableId) return undefined;
  const end = at + SECTION_PREFIX_SIZE + sectionLength(p, at);
  return end <= TS_PACKET_SIZE ? p.subarray(at, end) : undefined;
}

export class ComponentFilter {
  private pmtPids = new Set<number>();
  /** Dropped PIDs, by the PMT that named them. */
  private dropByPmt = new Map<number, Set<number>>();
  private drop = new Set<number>();
  /** Each PMT's PCR PID. */
  private pcrByPmt = new Map<number, number>();
  /** Dropped PIDs that carry a programme's PCR: their PCRs are kept. */
  private pcrOnly = new Set<number>();
  /** The last PMT packet seen per PID and its rewrite. */
  private rewritten = new Map<number, { from: Buffer; to: Buffer }>();
  dropped = 0;

  constructor(readonly keep: KeptKind) {}

  /** `data` (whole packets) as the stream sends it: a new buffer when anything changed. */
  push(data: Buffer): Buffer {
    let out: Buffer | undefined;
    let n = 0;
    for (let o = 0; o + TS_PACKET_SIZE <= data.length; o += TS_PACKET_SIZE) {
      const p = data.subarray(o, o + TS_PACKET_SIZE);
      const id = pid(p);
      let emit: Buffer | undefined = p;
      if (id === PAT_PID) this.pat(p);
      else if (this.pmtPids.has(id)) emit = this.pmt(id, p);
      else if (this.drop.has(id)) emit = this.pcrOnly.has(id) ? pcrPacket(p) : undefined;
      if (emit === p && !out) {
        n += TS_PACKET_SIZE;
        continue;
      }
      if (!out) {
        out = Buffer.allocUnsafe(data.length);
        data.copy(out, 0, 0, n);
      }
      if (emit) {
        emit.copy(out, n);
        n += TS_PACKET_SIZE;
      } else this.dropped++;
    }
    return out ? out.subarray(0, n) : data;
  }

  private pat(p: Buffer): void {
    const s = wholeSection(p, PAT_TABLE_ID);
    if (!s) return;
    const pids = new Set(parsePat(s).programs.map((x) => x.pid));
    for (const was of this.pmtPids) if (!pids.has(was)) this.forgetPmt(was);
    this.pmtPids = pids;
  }

  private forgetPmt(pmtPid: number): void {
    this.dropByPmt.delete(pmtPid);
    this.pcrByPmt.delete(pmtPid);
    this.rewritten.delete(pmtPid);
    this.rebuild();
  }

  /** The PMT packet as sent: rewritten without the dropped streams. */
  private pmt(pmtPid: number, p: Buffer): Buffer {
    const last = this.rewritten.get(pmtPid);
    if (last?.from.equals(p)) return last.to;
    const s = wholeSection(p, PMT_TABLE_ID);
    // A PMT over several packets passes as it is (rare; its dropped PIDs stay silent).
    if (!s) return p;
    const pmt = parsePmt(s);
    const drop = new Set<number>();
    for (const es of pmt.streams)
      if (componentKind(es.streamType, es.descriptors) !== this.keep) drop.add(es.pid);
    this.dropByPmt.set(pmtPid, drop);
    this.pcrByPmt.set(pmtPid, pmt.pcrPid);
    this.rebuild();
    const to = Buffer.alloc(TS_PACKET_SIZE, STUFFING_BYTE);
    const at = s.byteOffset - p.byteOffset;
    p.copy(to, 0, 0, at);
    pmtWithoutStreams(s, drop).copy(to, at);
    this.rewritten.set(pmtPid, { from: Buffer.from(p), to });
    return to;
  }

  private rebuild(): void {
    this.drop = new Set();
    for (const d of this.dropByPmt.values()) for (const x of d) this.drop.add(x);
    this.pcrOnly = new Set([...this.pcrByPmt.values()].filter((x) => this.drop.has(x)));
  }
}

/** An adaptation-field-only packet with `p`'s PCR (and discontinuity flag), or undefined when
 *  `p` carries no PCR. Its continuity counter is left as it was (a packet without payload does
 *  not count). */
function pcrPacket(p: Buffer): Buffer | undefined {
  if (!hasAdaptation(p) || p[4]! < 1 + PCR_SIZE || (p[5]! & AF_PCR) === 0) return undefined;
  const out = Buffer.alloc(TS_PACKET_SIZE, STUFFING_BYTE);
  out[0] = SYNC_BYTE;
  out[1] = p[1]! & 0x1f; // no payload_unit_start
  out[2] = p[2]!;
  out[3] = AFC_ADAPTATION | (p[3]! & 0x0f);
  out[TS_HEADER_SIZE] = TS_PACKET_SIZE - TS_HEADER_SIZE - 1;
  out[5] = (p[5]! & AF_DISCONTINUITY) | AF_PCR;
  p.copy(out, 6, 6, 6 + PCR_SIZE);
  return out;
}
