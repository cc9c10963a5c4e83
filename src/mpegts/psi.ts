// PSI/SI sections (ISO/IEC 13818-1 2.4.4, EN 300 468 5.2): table ids, the section header,
// descriptor loops, PAT and PMT parse and build, and a section cut into TS packets. Parsers
// take a buffer that starts with the section; builders return whole sections with CRC_32.
import { crc32 } from './crc.ts';
import {
  AFC_PAYLOAD,
  PID_HIGH_MASK,
  PUSI_FLAG,
  SYNC_BYTE,
  TS_HEADER_SIZE,
  TS_PACKET_SIZE,
} from './packet.ts';
import { isVideoStreamType } from './stream-type.ts';

export const PAT_TABLE_ID = 0x00;
export const CAT_TABLE_ID = 0x01;
export const PMT_TABLE_ID = 0x02;
export const NIT_ACTUAL_TABLE_ID = 0x40;
export const NIT_OTHER_TABLE_ID = 0x41;
export const SDT_ACTUAL_TABLE_ID = 0x42;
export const SDT_OTHER_TABLE_ID = 0x46;
export const EIT_PF_ACTUAL_TABLE_ID = 0x4e;
export const EIT_PF_OTHER_TABLE_ID = 0x4f;
export const EIT_SCHEDULE_ACTUAL_FIRST_TABLE_ID = 0x50;
export const EIT_SCHEDULE_ACTUAL_LAST_TABLE_ID = 0x5f;
export const EIT_SCHEDULE_OTHER_LAST_TABLE_ID = 0x6f;
export const TDT_TABLE_ID = 0x70;
export const TOT_TABLE_ID = 0x73;
/** In place of a table_id: the rest of the packet is stuffing, no section follows. */
export const STUFFING_BYTE = 0xff;

export const DESCRIPTOR_REGISTRATION = 0x05;
export const DESCRIPTOR_ISO639_LANGUAGE = 0x0a;
export const DESCRIPTOR_SERVICE = 0x48;
export const DESCRIPTOR_TELETEXT = 0x56;
/** subtitling_descriptor (EN 300 468 6.2.41): DVB subtitles (EN 300 743). */
export const DESCRIPTOR_SUBTITLING = 0x59;
export const DESCRIPTOR_AC3 = 0x6a;

/** table_id and the 2 bytes holding section_length: what section_length does not count. */
export const SECTION_PREFIX_SIZE = 3;
/** Long-form header: through last_section_number. */
export const LONG_HEADER_SIZE = 8;
export const CRC_SIZE = 4;
/** section_length limits: PSI (PAT, CAT, PMT; 2.4.4.5) and private/DVB SI sections. */
export const MAX_PSI_SECTION_LENGTH = 1021;
export const MAX_SI_SECTION_LENGTH = 4093;
/** Byte 1 flags: section_syntax_indicator 1, then '0' (PSI) or reserved_future_use 1 (DVB SI),
 *  then two reserved 1 bits. */
export const PSI_SECTION_FLAGS = 0xb0;
export const SI_SECTION_FLAGS = 0xf0;
const LENGTH_HIGH_MASK = 0x0f;
const RESERVED_BITS_HIGH = 0xe0; // the 3 reserved bits in front of a 13-bit PID
const RESERVED_BITS_LENGTH = 0xf0; // the 4 reserved bits in front of a 12-bit length
const PAT_ENTRY_SIZE = 4;
const PMT_STREAM_HEADER_SIZE = 5;
const PMT_FIXED_SIZE = 12; // long header + PCR_PID + program_info_length
const DESCRIPTOR_HEADER_SIZE = 2;

export interface SectionHeader {
  tableId: number;
  tableIdExtension: number;
  version: number;
  currentNext: boolean;
  sectionNumber: number;
  lastSectionNumber: number;
}

export function sectionLength(s: Uint8Array, o = 0): number {
  return ((s[o + 1]! & LENGTH_HIGH_MASK) << 8) | s[o + 2]!;
}

/** The long-form header (section_syntax_indicator 1) of the section at the start of `s`. */
export function parseSectionHeader(s: Uint8Array): SectionHeader {
  return {
    tableId: s[0]!,
    tableIdExtension: (s[3]! << 8) | s[4]!,
    version: (s[5]! >> 1) & 0x1f,
    currentNext: (s[5]! & 1) === 1,
    sectionNumber: s[6]!,
    lastSectionNumber: s[7]!,
  };
}

/** The section's CRC_32 matches its bytes (a whole section sums to 0). */
export function sectionCrcOk(s: Uint8Array): boolean {
  const end = SECTION_PREFIX_SIZE + sectionLength(s);
  return end <= s.length && end >= SECTION_PREFIX_SIZE + CRC_SIZE && crc32(s, 0, end) === 0;
}

/** Where the section's body ends: at its CRC_32, or at the end of `s` when cut short. */
function bodyEnd(s: Uint8Array): number {
  return Math.min(s.length, SECTION_PREFIX_SIZE + sectionLength(s) - CRC_SIZE);
}

export interface SectionInit {
  tableId: number;
  tableIdExtension: number;
  version?: number;
  /** Default true. */
  currentNext?: boolean;
  sectionNumber?: number;
  lastSectionNumber?: number;
  /** PSI_SECTION_FLAGS (default) or SI_SECTION_FLAGS. */
  flags?: number;
}

/** A long-form section: header, `body`, CRC_32. */
export function buildSection(h: SectionInit, body: Uint8Array): Buffer {
  const s = Buffer.alloc(LONG_HEADER_SIZE + body.length + CRC_SIZE);
  s[0] = h.tableId;
  s.writeUInt16BE(h.tableIdExtension, 3);
  s[5] = 0xc0 | (((h.version ?? 0) & 0x1f) << 1) | (h.currentNext === false ? 0 : 1);
  s[6] = h.sectionNumber ?? 0;
  s[7] = h.lastSectionNumber ?? 0;
  s.set(body, LONG_HEADER_SIZE);
  return finishSection(s, h.flags ?? PSI_SECTION_FLAGS);
}

/** Write section_length (from the buffer's size) and CRC_32 into a whole section; byte 1
 *  keeps its flag bits unless `flags` is given. Returns `s`. */
export function finishSection(s: Buffer, flags = s[1]! & ~LENGTH_HIGH_MASK): Buffer {
  const length = s.length - SECTION_PREFIX_SIZE;
  s[1] = (flags & ~LENGTH_HIGH_MASK) | ((length >> 8) & LENGTH_HIGH_MASK);
  s[2] = length & 0xff;
  s.writeUInt32BE(crc32(s, 0, s.length - CRC_SIZE), s.length - CRC_SIZE);
  return s;
}

export interface Descriptor {
  tag: number;
  /** The descriptor's body (a view of the section it was read from). */
  data: Buffer;
}

/** The descriptors of a loop; one that runs past the loop's end stops the reading. */
export function parseDescriptors(loop: Buffer): Descriptor[] {
  const out: Descriptor[] = [];
  for (let o = 0; o + DESCRIPTOR_HEADER_SIZE <= loop.length; ) {
    const body = o + DESCRIPTOR_HEADER_SIZE;
    const len = loop[o + 1]!;
    if (body + len > loop.length) break;
    out.push({ tag: loop[o]!, data: loop.subarray(body, body + len) });
    o = body + len;
  }
  return out;
}

export function buildDescriptors(list: readonly Descriptor[]): Buffer {
  const parts: Buffer[] = [];
  for (const d of list) parts.push(Buffer.from([d.tag, d.data.length]), d.data);
  return Buffer.concat(parts);
}

/** A 12-bit length field with its 4 reserved bits set, followed by a descriptor loop. */
function lengthPrefixed(loop: Buffer): Buffer {
  return Buffer.concat([
    Buffer.from([RESERVED_BITS_LENGTH | (loop.length >> 8), loop.length & 0xff]),
    loop,
  ]);
}

function read13(s: Uint8Array, o: number): number {
  return ((s[o]! & PID_HIGH_MASK) << 8) | s[o + 1]!;
}

function read12(s: Uint8Array, o: number): number {
  return ((s[o]! & LENGTH_HIGH_MASK) << 8) | s[o + 1]!;
}

export interface PatProgram {
  programNumber: number;
  pid: number;
}

export interface Pat {
  transportStreamId: number;
  version: number;
  currentNext: boolean;
  /** network_PID (programme number 0), when the PAT lists one. */
  networkPid?: number;
  /** Programmes and their PMT PIDs, in section order (programme number 0 not included). */
  programs: PatProgram[];
}

export function parsePat(section: Buffer): Pat {
  const h = parseSectionHeader(section);
  const pat: Pat = {
    transportStreamId: h.tableIdExtension,
    version: h.version,
    currentNext: h.currentNext,
    programs: [],
  };
  const end = bodyEnd(section);
  for (let i = LONG_HEADER_SIZE; i + PAT_ENTRY_SIZE <= end; i += PAT_ENTRY_SIZE) {
    const programNumber = (section[i]! << 8) | section[i + 1]!;
    const pid = read13(section, i + 2);
    if (programNumber !== 0) pat.programs.push({ programNumber, pid });
    else pat.networkPid ??= pid;
  }
  return pat;
}

/** The PMT PIDs a PAT announces, in PAT order; a later entry for the same programme number
 *  replaces an earlier one. */
export function patPmtPids(pat: Pat): Set<number> {
  const byProgram = new Map<number, number>();
  for (const p of pat.programs) byProgram.set(p.programNumber, p.pid);
  return new Set(byProgram.values());
}

export function buildPat(pat: Pat): Buffer {
  const entries: PatProgram[] = [...pat.programs];
  if (pat.networkPid !== undefined) entries.unshift({ programNumber: 0, pid: pat.networkPid });
  const body = Buffer.alloc(entries.length * PAT_ENTRY_SIZE);
  entries.forEach((e, i) => {
    body.writeUInt16BE(e.programNumber, i * PAT_ENTRY_SIZE);
    body.writeUInt16BE((RESERVED_BITS_HIGH << 8) | e.pid, i * PAT_ENTRY_SIZE + 2);
  });
  return buildSection(
    { tableId: PAT_TABLE_ID, tableIdExtension: pat.transportStreamId, ...versionOf(pat) },
    body,
  );
}

export interface PmtStream {
  streamType: number;
  pid: number;
  /** The ES_info descriptor loop (a view of the section; see parseDescriptors). */
  descriptors: Buffer;
}

export interface Pmt {
  programNumber: number;
  version: number;
  currentNext: boolean;
  pcrPid: number;
  /** The program_info descriptor loop. */
  programInfo: Buffer;
  streams: PmtStream[];
}

export function parsePmt(section: Buffer): Pmt {
  const h = parseSectionHeader(section);
  const end = bodyEnd(section);
  const infoLen = read12(section, 10);
  const pmt: Pmt = {
    programNumber: h.tableIdExtension,
    version: h.version,
    currentNext: h.currentNext,
    pcrPid: read13(section, 8),
    programInfo: section.subarray(PMT_FIXED_SIZE, Math.min(end, PMT_FIXED_SIZE + infoLen)),
    streams: [],
  };
  for (let o = PMT_FIXED_SIZE + infoLen; o + PMT_STREAM_HEADER_SIZE <= end; ) {
    const esInfoLen = read12(section, o + 3);
    const loop = o + PMT_STREAM_HEADER_SIZE;
    pmt.streams.push({
      streamType: section[o]!,
      pid: read13(section, o + 1),
      descriptors: section.subarray(loop, Math.min(end, loop + esInfoLen)),
    });
    o = loop + esInfoLen;
  }
  return pmt;
}

/** PIDs of the video elementary streams a PMT section lists. */
export function pmtVideoPids(section: Buffer): number[] {
  return parsePmt(section)
    .streams.filter((s) => isVideoStreamType(s.streamType))
    .map((s) => s.pid);
}

export function buildPmt(pmt: Pmt): Buffer {
  const parts: Buffer[] = [
    Buffer.from([RESERVED_BITS_HIGH | (pmt.pcrPid >> 8), pmt.pcrPid & 0xff]),
    lengthPrefixed(pmt.programInfo),
  ];
  for (const s of pmt.streams) {
    parts.push(Buffer.from([s.streamType, RESERVED_BITS_HIGH | (s.pid >> 8), s.pid & 0xff]));
    parts.push(lengthPrefixed(s.descriptors));
  }
  return buildSection(
    { tableId: PMT_TABLE_ID, tableIdExtension: pmt.programNumber, ...versionOf(pmt) },
    Buffer.concat(parts),
  );
}

/**
 * The PMT section at the start of `s` without the entries of the streams in `drop`: every
 * other byte as it was (reserved bits, descriptors), section_length and CRC_32 recomputed.
 */
export function pmtWithoutStreams(s: Buffer, drop: ReadonlySet<number>): Buffer {
  const infoLen = read12(s, 10);
  const kept: Buffer[] = [s.subarray(0, PMT_FIXED_SIZE + infoLen)];
  const end = SECTION_PREFIX_SIZE + sectionLength(s) - CRC_SIZE;
  for (let e = PMT_FIXED_SIZE + infoLen; e + PMT_STREAM_HEADER_SIZE <= end; ) {
    const size = PMT_STREAM_HEADER_SIZE + read12(s, e + 3);
    if (!drop.has(read13(s, e + 1))) kept.push(s.subarray(e, e + size));
    e += size;
  }
  kept.push(Buffer.alloc(CRC_SIZE));
  return finishSection(Buffer.concat(kept));
}

function versionOf(t: { version: number; currentNext: boolean }) {
  return { version: t.version, currentNext: t.currentNext };
}

/**
 * `section` as TS packets of `pid`: the first starts it (payload_unit_start, pointer_field 0),
 * the last is padded with stuffing bytes; continuity counters count up from `firstCc`.
 */
export function sectionPackets(section: Uint8Array, pid: number, firstCc: number): Buffer {
  const out = Buffer.allocUnsafe(sectionPacketsLength(section.length));
  writeSectionPackets(section, pid, firstCc, out, 0);
  return out;
}

/** Bytes of the packets sectionPackets() cuts a section of `length` bytes into. */
export function sectionPacketsLength(length: number): number {
  const firstRoom = TS_PACKET_SIZE - TS_HEADER_SIZE - 1;
  const room = TS_PACKET_SIZE - TS_HEADER_SIZE;
  return (1 + Math.ceil(Math.max(0, length - firstRoom) / room)) * TS_PACKET_SIZE;
}

/** sectionPackets() written into `out` at `at` (sectionPacketsLength() bytes, which must fit),
 *  with no buffer of its own: for a section sent once, straight into an output batch. */
export function writeSectionPackets(
  section: Uint8Array,
  pid: number,
  firstCc: number,
  out: Uint8Array,
  at: number,
): number {
  const bytes = sectionPacketsLength(section.length);
  let from = 0;
  for (let o = at, i = 0; o < at + bytes; o += TS_PACKET_SIZE, i++) {
    out[o] = SYNC_BYTE;
    out[o + 1] = (i === 0 ? PUSI_FLAG : 0) | ((pid >> 8) & PID_HIGH_MASK);
    out[o + 2] = pid & 0xff;
    out[o + 3] = AFC_PAYLOAD | ((firstCc + i) & 0x0f);
    let p = o + TS_HEADER_SIZE;
    if (i === 0) out[p++] = 0; // pointer_field: the section starts right after it
    const n = Math.min(section.length - from, o + TS_PACKET_SIZE - p);
    out.set(section.subarray(from, from + n), p);
    out.fill(STUFFING_BYTE, p + n, o + TS_PACKET_SIZE);
    from += n;
  }
  return bytes;
}

/** A version_number of one table as a rewriter sends it (the demuxer's consumers, the muxer): kept while the bytes sent stay the same,
 *  moved on when they change. */
export class OwnVersion {
  private last: Buffer | null = null;
  private v = -1;

  /** The version for a section whose versionless body is `body`; `start` is used first. */
  next(body: Buffer, start: number): number {
    if (this.v < 0) this.v = start & 0x1f;
    else if (this.last && !this.last.equals(body)) this.v = (this.v + 1) & 0x1f;
    this.last = body;
    return this.v;
  }

  reset(): void {
    this.last = null;
    this.v = -1;
  }
}

/** A section's bytes without what changes with the version (version byte and CRC). */
export function versionless(s: Buffer): Buffer {
  const b = Buffer.from(s.subarray(0, s.length - 4));
  b[5] = b[5]! & 0xc1;
  return b;
}
