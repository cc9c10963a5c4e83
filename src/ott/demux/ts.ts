// MPEG-TS demultiplexer for the packager: PAT → PMT → elementary streams, PES reassembly per
// PID. It reports each complete PES with the index of the TS packet that started it, so the
// TS segmenter can cut the byte stream exactly where a random-access PES begins.

import {
  AFC_ADAPTATION,
  AFC_PAYLOAD,
  PAT_PID,
  PID_COUNT,
  PID_HIGH_MASK,
  PUSI_FLAG,
  SYNC_BYTE,
  TEI_FLAG,
  TS_HEADER_SIZE,
  TS_PACKET_SIZE,
} from '../../mpegts/packet.ts';
import {
  isPesStart,
  PES_DTS_OFFSET,
  PES_HEADER_FIXED_SIZE,
  PES_PREFIX_SIZE,
  PES_PTS_DTS_FLAGS,
  PES_PTS_FLAG,
  PES_PTS_OFFSET,
  pesPacketLength,
  pesPayloadOffset,
  pesTimestampFlags,
  readTimestamp,
} from '../../mpegts/pes.ts';
import {
  DESCRIPTOR_AC3,
  DESCRIPTOR_ISO639_LANGUAGE,
  DESCRIPTOR_REGISTRATION,
  DESCRIPTOR_SUBTITLING,
  DESCRIPTOR_TELETEXT,
  PAT_TABLE_ID,
  PMT_TABLE_ID,
  parseDescriptors,
  parsePat,
  parsePmt,
  SECTION_PREFIX_SIZE,
  sectionLength,
} from '../../mpegts/psi.ts';
import {
  STREAM_TYPE_AAC_ADTS,
  STREAM_TYPE_ATSC_AC3,
  STREAM_TYPE_H264,
  STREAM_TYPE_HEVC,
  STREAM_TYPE_MPEG1_AUDIO,
  STREAM_TYPE_MPEG1_VIDEO,
  STREAM_TYPE_MPEG2_AUDIO,
  STREAM_TYPE_MPEG2_VIDEO,
  STREAM_TYPE_PRIVATE_PES,
} from '../../mpegts/stream-type.ts';

/** Largest PES we reassemble; anything bigger is broken input, dropped rather than grown. */
const MAX_PES_BYTES = 16 * 1024 * 1024;
/** First reassembly buffer of a PES whose length the header leaves open (video). */
const MIN_PES_CAPACITY = 16 * 1024;
/** Head room over the previous PES of a PID for the next one's first buffer. */
const PES_CAPACITY_HEADROOM = 1.25;
/** Bytes kept of a PES whose payload is not needed (head-only PIDs): enough for the access
 *  unit delimiter, parameter sets and SEI in front of the first slice, which is all that
 *  key-frame detection and the codec parameters read. */
export const PES_HEAD_BYTES = 4 * 1024;
/** Bytes kept past the start code of the coded picture in a head: its NAL header and the
 *  start of the slice header (or the MPEG-2 picture header with its coding type). */
export const PICTURE_HEAD_BYTES = 16;

/** Tells, from the byte after a start code, whether the coded picture begins there (a VCL
 *  NAL unit, an MPEG-2 picture header): a head-only PES needs nothing past it. */
export type PictureStart = (byteAfterStartCode: number) => boolean;

export type EsKind =
  | 'h264'
  | 'hevc'
  | 'mpeg2'
  | 'aac'
  | 'ac3'
  | 'mpa'
  | 'teletext'
  | 'dvbsub'
  | 'other';

export interface TeletextPage {
  language: string;
  /** 1 initial page, 2 subtitle page, 5 hearing-impaired subtitle page (EN 300 468 6.2.43). */
  type: number;
  magazine: number;
  page: number;
}

export interface SubtitlingPage {
  language: string;
  /** subtitling_type (EN 300 468 table 26): 0x10..0x15 normal, 0x20..0x25 hard of hearing. */
  type: number;
  compositionPage: number;
  ancillaryPage: number;
}

export interface EsInfo {
  pid: number;
  streamType: number;
  kind: EsKind;
  language?: string;
  teletext?: TeletextPage[];
  /** DVB subtitle services (subtitling_descriptor). */
  subtitling?: SubtitlingPage[];
}

export interface Pes {
  pid: number;
  /** 33-bit raw timestamps (90 kHz), undefined when absent. */
  pts?: number;
  dts?: number;
  data: Buffer;
  /** Payload bytes of the whole PES (more than `data.length` for a head-only PID). */
  size: number;
  /** Only the head of the payload was kept (see `headOnly`). */
  head: boolean;
  /** Global index of the TS packet that carried the PES header. */
  packetIndex: number;
}

export interface DemuxEvents {
  pmt(streams: EsInfo[], programNumber: number): void;
  pes(pes: Pes): void;
}

/** Reassembly state of one PID, kept across its PES (no object per PES). */
interface PesAssembly {
  /** A PES is being gathered. */
  active: boolean;
  /** Reassembly buffer: payload bytes are copied in once, as they arrive. */
  buf: Buffer;
  /** `buf` as 32-bit words (undefined when `buf` does not start on a word). */
  words: Int32Array | undefined;
  /** Where the PES starts in `buf`: 0–3 bytes of padding that put the second packet's payload
   *  on a word boundary (see `copyPayload`). */
  start: number;
  /** Bytes of the PES held in `buf` (from `start`). */
  size: number;
  /** Bytes of payload seen (more than `size` when only the head is kept). */
  total: number;
  expected: number;
  packetIndex: number;
  /** Keep at most this many bytes (the head); the rest is only counted. */
  limit: number;
  /** Head-only PES: where the picture starts (set from `headOnly`), else undefined. */
  picture: PictureStart | undefined;
  /** Head-only PES: where the search for the picture's start code resumes. */
  scan: number;
  /** `buf` is this PID's reusable scratch buffer (the PES is only read during the callback). */
  transient: boolean;
  /** The scratch buffer kept for transient PES of this PID (grown, never shrunk). */
  scratch?: Buffer;
  /** Payload bytes of the PID's previous PES: the first capacity of the next one. */
  lastTotal: number;
}

/** Bytes per word of the word-wise payload copy. */
const WORD_BYTES = 4;

/** What the demuxer does with a PID's packets (per-PID table, looked up on every packet). */
const ROLE_NONE = 0;
const ROLE_PES = 1;
const ROLE_PSI = 2;

/** Map a PMT stream_type (plus descriptors for private data) to what we can package. */
export function esKind(
  streamType: number,
  descriptorTags: number[],
  registration?: string,
): EsKind {
  switch (streamType) {
    case STREAM_TYPE_H264:
      return 'h264';
    case STREAM_TYPE_HEVC:
      return 'hevc';
    case STREAM_TYPE_MPEG1_VIDEO:
    case STREAM_TYPE_MPEG2_VIDEO:
      return 'mpeg2';
    case STREAM_TYPE_AAC_ADTS:
      return 'aac';
    case STREAM_TYPE_MPEG1_AUDIO:
    case STREAM_TYPE_MPEG2_AUDIO:
      return 'mpa';
    case STREAM_TYPE_ATSC_AC3:
      return 'ac3';
    case STREAM_TYPE_PRIVATE_PES:
      if (descriptorTags.includes(DESCRIPTOR_AC3) || registration === 'AC-3') return 'ac3';
      if (descriptorTags.includes(DESCRIPTOR_TELETEXT)) return 'teletext';
      if (descriptorTags.includes(DESCRIPTOR_SUBTITLING)) return 'dvbsub';
      return 'other';
    default:
      return 'other';
  }
}

/** Language and teletext pages from an ES_info loop into `info`; returns the tags seen. */
function readEsDescriptors(loop: Buffer, info: EsInfo): number[] {
  const tags: number[] = [];
  for (const d of parseDescriptors(loop)) {
    tags.push(d.tag);
    if (d.tag === DESCRIPTOR_ISO639_LANGUAGE && d.data.length >= 3)
      info.language = d.data.toString('latin1', 0, 3);
    if (d.tag === DESCRIPTOR_TELETEXT)
      info.teletext = parseTeletextDescriptor(d.data, 0, d.data.length);
    if (d.tag === DESCRIPTOR_SUBTITLING) info.subtitling = parseSubtitlingDescriptor(d.data);
  }
  return tags;
}

function parseTeletextDescriptor(b: Buffer, start: number, end: number): TeletextPage[] {
  const pages: TeletextPage[] = [];
  for (let o = start; o + 5 <= end; o += 5) {
    const magazine = b[o + 3]! & 0x07 || 8;
    pages.push({
      language: b.toString('latin1', o, o + 3),
      type: b[o + 3]! >> 3,
      magazine,
      page: b[o + 4]!,
    });
  }
  return pages;
}

/** subtitling_descriptor entries: language, type, composition and ancillary page ids. */
function parseSubtitlingDescriptor(b: Buffer): SubtitlingPage[] {
  const pages: SubtitlingPage[] = [];
  for (let o = 0; o + 8 <= b.length; o += 8)
    pages.push({
      language: b.toString('latin1', o, o + 3),
      type: b[o + 3]!,
      compositionPage: b.readUInt16BE(o + 4),
      ancillaryPage: b.readUInt16BE(o + 6),
    });
  return pages;
}

/** format_identifier of the loop's first registration descriptor (a loop that runs past its
 *  end is read up to there). */
function registrationOf(loop: Buffer): string | undefined {
  for (let o = 0; o + 2 <= loop.length; o += 2 + loop[o + 1]!) {
    if (loop[o] === DESCRIPTOR_REGISTRATION && loop[o + 1]! >= 4)
      return loop.toString('latin1', o + 2, o + 6);
  }
  return undefined;
}

export class TsDemux {
  pmtPid = -1;
  private pmtVersion = -1;
  private streams = new Map<number, EsInfo>();
  /** Role of every PID (ROLE_*): one typed-array read decides whether a packet is looked at. */
  private roles = new Uint8Array(PID_COUNT);
  /** Reassembly state per PID, created on a PID's first PES. */
  private assemblies: (PesAssembly | undefined)[] = new Array(PID_COUNT).fill(undefined);
  /** PIDs with reassembly state (for flush/reset without scanning every PID). */
  private assembled: number[] = [];
  private sections = new Map<number, { chunks: Buffer[]; size: number; need: number }>();
  /** Global index of the next packet fed. */
  packetCount = 0;
  /** The batch being pushed as 32-bit words, while `push` runs (undefined when it does not
   *  start on a word). */
  private words: Int32Array | undefined;
  /** The latest PAT and PMT packets that started a section, for segment prefixes: copies,
   *  each overwritten in place by the next (no allocation per repetition), so whoever keeps
   *  one past the current call copies it. */
  patPacket?: Buffer;
  pmtPacket?: Buffer;
  /**
   * PIDs whose PES payload is not needed beyond its head (video when only HLS-TS is made):
   * the returned test finds the start of the coded picture, and the PES is kept up to
   * PICTURE_HEAD_BYTES past it (at most PES_HEAD_BYTES); the rest is only counted.
   * Undefined: the whole PES is kept.
   */
  headOnly: (pid: number) => PictureStart | undefined = () => undefined;
  /**
   * PIDs whose PES data nobody keeps after the `pes` callback returns (whoever keeps some
   * copies it): their PES are gathered in one reusable buffer per PID instead of a new one each.
   * Asked again when the PES is emitted; if the answer changed to false meanwhile, the data is
   * copied out first, so a consumer that keeps samples never gets the reused buffer.
   */
  transient: (pid: number) => boolean = () => false;

  constructor(private events: DemuxEvents) {
    this.roles[PAT_PID] = ROLE_PSI;
  }

  /** Feed N×188 aligned bytes. Packets are read in place (no per-packet view or copy), and
   *  only those of the PAT, the PMT and the elementary streams are looked at past the PID. */
  push(buf: Buffer): void {
    const last = buf.length - TS_PACKET_SIZE;
    const roles = this.roles;
    const assemblies = this.assemblies;
    this.words =
      (buf.byteOffset & (WORD_BYTES - 1)) === 0
        ? new Int32Array(buf.buffer, buf.byteOffset, buf.length >>> 2)
        : undefined;
    for (let at = 0; at <= last; at += TS_PACKET_SIZE) {
      const b1 = buf[at + 1]!;
      const pid = ((b1 & PID_HIGH_MASK) << 8) | buf[at + 2]!;
      const role = roles[pid]!;
      if (role === ROLE_NONE || buf[at] !== SYNC_BYTE) {
        this.packetCount++;
        continue;
      }
      // The body of a PES whose kept part is complete (a head-only video PES past its
      // picture start, most of the packets here) is only counted.
      const a =
        role === ROLE_PES && (b1 & (TEI_FLAG | PUSI_FLAG)) === 0 ? assemblies[pid] : undefined;
      if (a?.active && a.size >= a.limit && a.expected === 0) {
        const b3 = buf[at + 3]!;
        const o = b3 & AFC_ADAPTATION ? TS_HEADER_SIZE + 1 + buf[at + 4]! : TS_HEADER_SIZE;
        if (b3 & AFC_PAYLOAD && o < TS_PACKET_SIZE) {
          a.total += TS_PACKET_SIZE - o;
          if (a.total > MAX_PES_BYTES) a.active = false;
        }
      } else this.packet(buf, at, role);
      this.packetCount++;
    }
    // The caller's batch is only valid during the call.
    this.words = undefined;
  }

  /** Emit every PES still being assembled (end of input or before a splice). */
  flush(): void {
    for (const pid of this.assembled) this.finishPes(pid);
  }

  /** Forget partial PES and PSI (after a splice the old fragments are meaningless). */
  reset(): void {
    for (const pid of this.assembled) this.assemblies[pid]!.active = false;
    this.sections.clear();
  }

  esInfo(pid: number): EsInfo | undefined {
    return this.streams.get(pid);
  }

  /** One packet at `at` in `b` of a PID with a role. */
  private packet(b: Buffer, at: number, role: number): void {
    const b1 = b[at + 1]!;
    const b3 = b[at + 3]!;
    if ((b1 & TEI_FLAG) !== 0 || (b3 & AFC_PAYLOAD) === 0) return; // TEI or no payload
    let o = TS_HEADER_SIZE;
    if (b3 & AFC_ADAPTATION) o += 1 + b[at + 4]!;
    if (o >= TS_PACKET_SIZE) return;
    const pid = ((b1 & PID_HIGH_MASK) << 8) | b[at + 2]!;
    const pusi = (b1 & PUSI_FLAG) !== 0;
    if (role === ROLE_PES) {
      this.pesPayload(pid, b, at + o, at + TS_PACKET_SIZE, pusi);
      return;
    }
    if (pusi) {
      if (pid === PAT_PID) {
        this.patPacket ??= Buffer.allocUnsafe(TS_PACKET_SIZE);
        b.copy(this.patPacket, 0, at, at + TS_PACKET_SIZE);
      } else {
        this.pmtPacket ??= Buffer.allocUnsafe(TS_PACKET_SIZE);
        b.copy(this.pmtPacket, 0, at, at + TS_PACKET_SIZE);
      }
    }
    this.psi(pid, b.subarray(at + o, at + TS_PACKET_SIZE), pusi);
  }

  private psi(pid: number, payload: Buffer, pusi: boolean): void {
    let data = payload;
    if (pusi) {
      const pointer = payload[0]!;
      data = payload.subarray(1 + pointer);
      this.sections.set(pid, { chunks: [], size: 0, need: -1 });
    }
    const s = this.sections.get(pid);
    if (!s) return;
    s.chunks.push(data);
    s.size += data.length;
    const all = s.chunks.length === 1 ? s.chunks[0]! : Buffer.concat(s.chunks);
    if (s.need < 0 && all.length >= SECTION_PREFIX_SIZE)
      s.need = SECTION_PREFIX_SIZE + sectionLength(all);
    if (s.need >= 0 && all.length >= s.need) {
      this.sections.delete(pid);
      const section = all.subarray(0, s.need);
      if (section[0] === PAT_TABLE_ID) this.pat(section);
      else if (section[0] === PMT_TABLE_ID) this.pmt(section);
    } else {
      // Kept across pushes: `data` is a view of the caller's packets, valid during push only.
      s.chunks = [all === data ? Buffer.from(data) : all];
    }
  }

  private pat(s: Buffer): void {
    const first = parsePat(s).programs[0]; // first programme only: a packaged stream is an SPTS
    if (!first || first.pid === this.pmtPid) return;
    if (this.pmtPid >= 0 && this.roles[this.pmtPid] === ROLE_PSI && this.pmtPid !== PAT_PID)
      this.roles[this.pmtPid] = ROLE_NONE;
    this.pmtPid = first.pid;
    this.pmtVersion = -1;
    this.roles[first.pid] = ROLE_PSI;
  }

  private pmt(s: Buffer): void {
    const version = (s[5]! >> 1) & 0x1f; // read before parsing: most PMTs are repeats
    if (version === this.pmtVersion) return;
    this.pmtVersion = version;
    const pmt = parsePmt(s);
    const programNumber = pmt.programNumber;
    const streams = new Map<number, EsInfo>();
    for (const es of pmt.streams) {
      const info: EsInfo = { pid: es.pid, streamType: es.streamType, kind: 'other' };
      const tags = readEsDescriptors(es.descriptors, info);
      info.kind = esKind(es.streamType, tags, registrationOf(es.descriptors));
      streams.set(es.pid, info);
    }
    for (const pid of this.streams.keys())
      if (this.roles[pid] === ROLE_PES) this.roles[pid] = ROLE_NONE;
    // PSI keeps its role where a broken PMT lists the PAT or PMT PID as a stream.
    for (const pid of streams.keys()) if (this.roles[pid] === ROLE_NONE) this.roles[pid] = ROLE_PES;
    this.streams = streams;
    this.assembled = this.assembled.filter((pid) => {
      if (streams.has(pid)) return true;
      this.assemblies[pid] = undefined;
      return false;
    });
    this.events.pmt([...streams.values()], programNumber);
  }

  private pesPayload(pid: number, b: Buffer, from: number, to: number, pusi: boolean): void {
    let a = this.assemblies[pid];
    const len = to - from;
    if (pusi) {
      if (a?.active) this.finishPes(pid);
      const declared =
        len >= PES_PREFIX_SIZE && isPesStart(b, from) ? pesPacketLength(b, from) : -1;
      const expected = declared > 0 ? declared + PES_PREFIX_SIZE : 0;
      const picture = this.headOnly(pid);
      const limit = picture ? PES_HEAD_BYTES : MAX_PES_BYTES;
      // Whole-packet payloads after the first (184 bytes, or 176 beside a PCR) then land on
      // word boundaries. Heads are short: they start at 0, as findPicture reads them.
      const start = picture ? 0 : -len & (WORD_BYTES - 1);
      const want =
        start +
        Math.min(
          limit,
          Math.max(
            len,
            Math.ceil(
              expected || Math.max(MIN_PES_CAPACITY, (a?.lastTotal ?? 0) * PES_CAPACITY_HEADROOM),
            ),
          ),
        );
      if (!a) {
        a = {
          active: false,
          buf: EMPTY,
          words: undefined,
          start: 0,
          size: 0,
          total: 0,
          expected: 0,
          packetIndex: 0,
          limit: 0,
          picture: undefined,
          scan: 0,
          transient: false,
          lastTotal: 0,
        };
        this.assemblies[pid] = a;
        this.assembled.push(pid);
      }
      a.transient = this.transient(pid);
      if (a.transient) {
        if (!a.scratch || a.scratch.length < want) a.scratch = Buffer.allocUnsafe(want);
        if (a.buf !== a.scratch) setBuffer(a, a.scratch);
      } else setBuffer(a, Buffer.allocUnsafe(want));
      a.active = true;
      a.start = start;
      a.size = 0;
      a.total = 0;
      a.expected = expected;
      a.packetIndex = this.packetCount;
      a.limit = limit;
      a.picture = picture;
      a.scan = 0;
    } else if (!a?.active) return;
    if (a.total + len > MAX_PES_BYTES) {
      a.active = false;
      return;
    }
    a.total += len;
    const keep = Math.min(len, a.limit - a.size);
    if (keep > 0) {
      const end = a.start + a.size + keep;
      if (end > a.buf.length) {
        const grown = Buffer.allocUnsafe(
          Math.min(a.start + a.limit, Math.max(end, a.buf.length * 2)),
        );
        a.buf.copy(grown, 0, 0, a.start + a.size);
        setBuffer(a, grown);
        if (a.transient) a.scratch = grown;
      }
      this.copyPayload(a, b, from, keep);
      a.size += keep;
      if (a.picture) findPicture(a);
    }
    if (a.expected > 0 && a.total >= a.expected) this.finishPes(pid);
  }

  /**
   * Append `n` payload bytes at `from` in `b` to the PES. A call into Buffer#copy per packet
   * costs a view of the source and a native call (~80 ns a packet); payloads that start and
   * end on words on both sides (all but a PES's first and last packet) are copied as 32-bit
   * words instead, eight a turn: one a turn spends more on the loop than on the copy (~65 ns
   * a 184-byte payload against ~25).
   */
  private copyPayload(a: PesAssembly, b: Buffer, from: number, n: number): void {
    const at = a.start + a.size;
    const s = this.words;
    const d = a.words;
    if (s && d && ((from | at | n) & (WORD_BYTES - 1)) === 0) {
      let i = from >>> 2;
      let j = at >>> 2;
      const e = (from + n) >>> 2;
      for (; i + 8 <= e; i += 8, j += 8) {
        d[j] = s[i]!;
        d[j + 1] = s[i + 1]!;
        d[j + 2] = s[i + 2]!;
        d[j + 3] = s[i + 3]!;
        d[j + 4] = s[i + 4]!;
        d[j + 5] = s[i + 5]!;
        d[j + 6] = s[i + 6]!;
        d[j + 7] = s[i + 7]!;
      }
      for (; i < e; i++, j++) d[j] = s[i]!;
    } else b.copy(a.buf, at, from, from + n);
  }

  private finishPes(pid: number): void {
    const a = this.assemblies[pid];
    if (!a?.active) return;
    a.active = false;
    a.lastTotal = a.total;
    const b = a.buf;
    const s = a.start;
    const n = a.size;
    if (n < PES_HEADER_FIXED_SIZE || !isPesStart(b, s)) return;
    const flags = pesTimestampFlags(b, s);
    const headerEnd = pesPayloadOffset(b, s);
    if (headerEnd > n) return;
    let pts: number | undefined;
    let dts: number | undefined;
    if (flags & PES_PTS_FLAG) pts = readTimestamp(b, s + PES_PTS_OFFSET);
    if (flags === PES_PTS_DTS_FLAGS) dts = readTimestamp(b, s + PES_DTS_OFFSET);
    const end = a.expected > 0 ? Math.min(a.expected, n) : n;
    const total = a.expected > 0 ? Math.min(a.expected, a.total) : a.total;
    // Gathered in the reused buffer, but someone now keeps samples: hand over a copy.
    const data =
      a.transient && !this.transient(pid)
        ? Buffer.from(b.subarray(s + headerEnd, s + end))
        : b.subarray(s + headerEnd, s + end);
    this.events.pes({
      pid,
      pts,
      dts,
      data,
      size: Math.max(0, total - headerEnd),
      head: a.size < a.total,
      packetIndex: a.packetIndex,
    });
  }
}

const EMPTY = Buffer.alloc(0);

/** Make `buf` the PES's reassembly buffer, with its word view when it starts on a word. */
function setBuffer(a: PesAssembly, buf: Buffer): void {
  a.buf = buf;
  a.words =
    (buf.byteOffset & (WORD_BYTES - 1)) === 0
      ? new Int32Array(buf.buffer, buf.byteOffset, buf.length >>> 2)
      : undefined;
}

/**
 * Look for the coded picture's start code in the head gathered so far (from where the last
 * look stopped); once found, the head ends PICTURE_HEAD_BYTES past it. Start codes are
 * searched after the PES header, skipping three bytes where the third is above 1 (no 00 00 01
 * can begin at any of them).
 */
export function findPicture(a: {
  buf: Buffer;
  size: number;
  limit: number;
  picture: PictureStart | undefined;
  scan: number;
}): void {
  const b = a.buf;
  const n = a.size;
  if (n < PES_HEADER_FIXED_SIZE || !a.picture) return;
  let i = Math.max(a.scan, pesPayloadOffset(b));
  while (i + 3 < n) {
    const c = b[i + 2]!;
    if (c > 1) i += 3;
    else if (c === 1) {
      if (b[i] === 0 && b[i + 1] === 0 && a.picture(b[i + 3]!)) {
        a.limit = Math.min(a.limit, Math.max(n, i + 3 + PICTURE_HEAD_BYTES));
        a.picture = undefined;
        return;
      }
      i += 3;
    } else i++;
  }
  a.scan = i;
}
