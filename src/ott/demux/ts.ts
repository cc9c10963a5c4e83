// MPEG-TS demultiplexer for the packager: PAT → PMT → elementary streams, PES reassembly per
// PID. It reports each complete PES with the index of the TS packet that started it, so the
// TS segmenter can cut the byte stream exactly where a random-access PES begins.

export const PACKET_LENGTH = 188;
export const SYNC_BYTE = 0x47;
const PAT_PID = 0;
const NULL_PID = 0x1fff;
const TABLE_PAT = 0x00;
const TABLE_PMT = 0x02;
const DESC_ISO639 = 0x0a;
const DESC_TELETEXT = 0x56;
const DESC_AC3 = 0x6a;
const DESC_REGISTRATION = 0x05;
/** Largest PES we reassemble; anything bigger is broken input, dropped rather than grown. */
const MAX_PES_BYTES = 16 * 1024 * 1024;
/** First reassembly buffer of a PES whose length the header leaves open (video). */
const MIN_PES_CAPACITY = 16 * 1024;
/** Bytes kept of a PES whose payload is not needed (head-only PIDs): enough for the access
 *  unit delimiter, parameter sets and SEI in front of the first slice, which is all that
 *  key-frame detection and the codec parameters read. */
export const PES_HEAD_BYTES = 4 * 1024;

export type EsKind = 'h264' | 'hevc' | 'mpeg2' | 'aac' | 'ac3' | 'mpa' | 'teletext' | 'other';

export interface TeletextPage {
  language: string;
  /** 1 initial page, 2 subtitle page, 5 hearing-impaired subtitle page (EN 300 468 6.2.43). */
  type: number;
  magazine: number;
  page: number;
}

export interface EsInfo {
  pid: number;
  streamType: number;
  kind: EsKind;
  language?: string;
  teletext?: TeletextPage[];
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

interface PesAssembly {
  /** Reassembly buffer: payload bytes are copied in once, as they arrive. */
  buf: Buffer;
  /** Bytes held in `buf`. */
  size: number;
  /** Bytes of payload seen (more than `size` when only the head is kept). */
  total: number;
  expected: number;
  packetIndex: number;
  /** Keep at most this many bytes (the head); the rest is only counted. */
  limit: number;
}

/** Map a PMT stream_type (plus descriptors for private data) to what we can package. */
export function esKind(
  streamType: number,
  descriptorTags: number[],
  registration?: string,
): EsKind {
  switch (streamType) {
    case 0x1b:
      return 'h264';
    case 0x24:
      return 'hevc';
    case 0x01:
    case 0x02:
      return 'mpeg2';
    case 0x0f:
      return 'aac';
    case 0x03:
    case 0x04:
      return 'mpa';
    case 0x81:
      return 'ac3';
    case 0x06:
      if (descriptorTags.includes(DESC_AC3) || registration === 'AC-3') return 'ac3';
      if (descriptorTags.includes(DESC_TELETEXT)) return 'teletext';
      return 'other';
    default:
      return 'other';
  }
}

/** 33-bit PTS/DTS from the 5-byte PES field. */
export function readTimestamp(b: Buffer, o: number): number {
  return (
    (b[o]! & 0x0e) * 536870912 + // << 29
    ((b[o + 1]! << 7) | (b[o + 2]! >> 1)) * 32768 + // << 15
    ((b[o + 3]! << 7) | (b[o + 4]! >> 1))
  );
}

function parseDescriptors(b: Buffer, start: number, end: number, info: EsInfo): number[] {
  const tags: number[] = [];
  let o = start;
  while (o + 2 <= end) {
    const tag = b[o]!;
    const len = b[o + 1]!;
    const body = o + 2;
    if (body + len > end) break;
    tags.push(tag);
    if (tag === DESC_ISO639 && len >= 3) info.language = b.toString('latin1', body, body + 3);
    if (tag === DESC_TELETEXT) info.teletext = parseTeletextDescriptor(b, body, body + len);
    o = body + len;
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

function registrationOf(b: Buffer, start: number, end: number): string | undefined {
  for (let o = start; o + 2 <= end; o += 2 + b[o + 1]!) {
    if (b[o] === DESC_REGISTRATION && b[o + 1]! >= 4) return b.toString('latin1', o + 2, o + 6);
  }
  return undefined;
}

export class TsDemux {
  pmtPid = -1;
  private pmtVersion = -1;
  private streams = new Map<number, EsInfo>();
  private assemblies = new Map<number, PesAssembly>();
  private sections = new Map<number, { chunks: Buffer[]; size: number; need: number }>();
  /** Global index of the next packet fed. */
  packetCount = 0;
  /** The latest PAT and PMT packets that started a section (copies), for segment prefixes. */
  patPacket?: Buffer;
  pmtPacket?: Buffer;
  /** PIDs whose PES payload is not needed beyond its head (video when only HLS-TS is made). */
  headOnly: (pid: number) => boolean = () => false;
  /** Last PES size per PID: the first capacity of the next one, so buffers rarely grow. */
  private lastSize = new Map<number, number>();

  constructor(private events: DemuxEvents) {}

  /** Feed N×188 aligned bytes. */
  push(buf: Buffer): void {
    for (let o = 0; o + PACKET_LENGTH <= buf.length; o += PACKET_LENGTH) {
      this.packet(buf, o);
      this.packetCount++;
    }
  }

  /** Emit every PES still being assembled (end of input or before a splice). */
  flush(): void {
    for (const pid of [...this.assemblies.keys()]) this.finishPes(pid);
  }

  /** Forget partial PES and PSI (after a splice the old fragments are meaningless). */
  reset(): void {
    this.assemblies.clear();
    this.sections.clear();
  }

  esInfo(pid: number): EsInfo | undefined {
    return this.streams.get(pid);
  }

  /** One packet at `at` in `b` (read in place: no per-packet view or copy). */
  private packet(b: Buffer, at: number): void {
    if (b[at] !== SYNC_BYTE) return;
    const b1 = b[at + 1]!;
    const pid = ((b1 & 0x1f) << 8) | b[at + 2]!;
    if (pid === NULL_PID) return;
    const pusi = (b1 & 0x40) !== 0;
    const afc = (b[at + 3]! >> 4) & 0x03;
    if ((b1 & 0x80) !== 0 || (afc & 0x01) === 0) return; // TEI or no payload
    let o = 4;
    if (afc & 0x02) o += 1 + b[at + 4]!;
    if (o >= PACKET_LENGTH) return;
    if (pid === PAT_PID || pid === this.pmtPid) {
      if (pusi) {
        const copy = Buffer.from(b.subarray(at, at + PACKET_LENGTH));
        if (pid === PAT_PID) this.patPacket = copy;
        else this.pmtPacket = copy;
      }
      this.psi(pid, b.subarray(at + o, at + PACKET_LENGTH), pusi);
    } else if (this.streams.has(pid)) this.pesPayload(pid, b, at + o, at + PACKET_LENGTH, pusi);
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
    if (s.need < 0 && all.length >= 3) s.need = 3 + (((all[1]! & 0x0f) << 8) | all[2]!);
    if (s.need >= 0 && all.length >= s.need) {
      this.sections.delete(pid);
      const section = all.subarray(0, s.need);
      if (section[0] === TABLE_PAT) this.pat(section);
      else if (section[0] === TABLE_PMT) this.pmt(section);
    }
  }

  private pat(s: Buffer): void {
    const end = s.length - 4; // CRC
    for (let o = 8; o + 4 <= end; o += 4) {
      const program = (s[o]! << 8) | s[o + 1]!;
      if (program === 0) continue; // NIT
      const pid = ((s[o + 2]! & 0x1f) << 8) | s[o + 3]!;
      if (pid !== this.pmtPid) {
        this.pmtPid = pid;
        this.pmtVersion = -1;
      }
      return; // first programme only: a packaged stream is an SPTS
    }
  }

  private pmt(s: Buffer): void {
    const version = (s[5]! >> 1) & 0x1f;
    if (version === this.pmtVersion) return;
    this.pmtVersion = version;
    const programNumber = (s[3]! << 8) | s[4]!;
    const infoLen = ((s[10]! & 0x0f) << 8) | s[11]!;
    const end = s.length - 4;
    const streams = new Map<number, EsInfo>();
    for (let o = 12 + infoLen; o + 5 <= end; ) {
      const streamType = s[o]!;
      const pid = ((s[o + 1]! & 0x1f) << 8) | s[o + 2]!;
      const esLen = ((s[o + 3]! & 0x0f) << 8) | s[o + 4]!;
      const info: EsInfo = { pid, streamType, kind: 'other' };
      const tags = parseDescriptors(s, o + 5, Math.min(end, o + 5 + esLen), info);
      info.kind = esKind(streamType, tags, registrationOf(s, o + 5, Math.min(end, o + 5 + esLen)));
      streams.set(pid, info);
      o += 5 + esLen;
    }
    this.streams = streams;
    for (const pid of [...this.assemblies.keys()])
      if (!streams.has(pid)) this.assemblies.delete(pid);
    this.events.pmt([...streams.values()], programNumber);
  }

  private pesPayload(pid: number, b: Buffer, from: number, to: number, pusi: boolean): void {
    let a = this.assemblies.get(pid);
    if (pusi) {
      if (a) this.finishPes(pid);
      const len = to - from;
      const declared =
        len >= 6 && b[from] === 0 && b[from + 1] === 0 && b[from + 2] === 1
          ? (b[from + 4]! << 8) | b[from + 5]!
          : -1;
      const expected = declared > 0 ? declared + 6 : 0;
      const limit = this.headOnly(pid) ? PES_HEAD_BYTES : MAX_PES_BYTES;
      const want = expected || Math.max(MIN_PES_CAPACITY, (this.lastSize.get(pid) ?? 0) * 1.25);
      a = {
        buf: Buffer.allocUnsafe(Math.min(limit, Math.max(len, Math.ceil(want)))),
        size: 0,
        total: 0,
        expected,
        packetIndex: this.packetCount,
        limit,
      };
      this.assemblies.set(pid, a);
    } else if (!a) return;
    const len = to - from;
    if (a.total + len > MAX_PES_BYTES) {
      this.assemblies.delete(pid);
      return;
    }
    a.total += len;
    const keep = Math.min(len, a.limit - a.size);
    if (keep > 0) {
      if (a.size + keep > a.buf.length) {
        const grown = Buffer.allocUnsafe(
          Math.min(a.limit, Math.max(a.size + keep, a.buf.length * 2)),
        );
        a.buf.copy(grown, 0, 0, a.size);
        a.buf = grown;
      }
      b.copy(a.buf, a.size, from, from + keep);
      a.size += keep;
    }
    if (a.expected > 0 && a.total >= a.expected) this.finishPes(pid);
  }

  private finishPes(pid: number): void {
    const a = this.assemblies.get(pid);
    if (!a) return;
    this.assemblies.delete(pid);
    this.lastSize.set(pid, a.total);
    const b = a.buf.subarray(0, a.size);
    if (b.length < 9 || b[0] !== 0 || b[1] !== 0 || b[2] !== 1) return;
    const flags = b[7]!;
    const headerEnd = 9 + b[8]!;
    if (headerEnd > b.length) return;
    let pts: number | undefined;
    let dts: number | undefined;
    if (flags & 0x80) pts = readTimestamp(b, 9);
    if ((flags & 0xc0) === 0xc0) dts = readTimestamp(b, 14);
    const end = a.expected > 0 ? Math.min(a.expected, b.length) : b.length;
    const total = a.expected > 0 ? Math.min(a.expected, a.total) : a.total;
    this.events.pes({
      pid,
      pts,
      dts,
      data: b.subarray(headerEnd, end),
      size: Math.max(0, total - headerEnd),
      head: a.size < a.total,
      packetIndex: a.packetIndex,
    });
  }
}
