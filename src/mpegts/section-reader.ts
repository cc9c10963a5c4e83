// Reassembles the PSI/SI sections of one PID from its TS packets (ISO/IEC 13818-1 2.4.4):
// pointer_field, several sections in one packet, a section spanning packets, stuffing after
// the last one. A continuity break or a section longer than allowed drops the section in
// progress; a section whose CRC_32 fails is counted and not handed out. Sections come out as
// copies the caller may keep. A section that repeats bytes already checked (tables repeat ten
// times a second, EIT every few seconds) is handed on as the copy made the first time, with no
// copy and no CRC check: the last section, and the last VERIFIED_MAX distinct ones by CRC_32.
import { cc, hasPayload, payloadOffset, pusi, TEI_FLAG, TS_PACKET_SIZE } from './packet.ts';
import {
  CRC_SIZE,
  LONG_HEADER_SIZE,
  MAX_SI_SECTION_LENGTH,
  SECTION_PREFIX_SIZE,
  STUFFING_BYTE,
  sectionCrcOk,
  sectionLength,
} from './psi.ts';

const MAX_SECTION = SECTION_PREFIX_SIZE + MAX_SI_SECTION_LENGTH;
const SYNTAX_INDICATOR = 0x80;
/** Distinct checked sections kept per PID to recognise repeats: the EIT present/following of a
 *  multiplex's services (two sections each) fit; a schedule cycle longer than this is checked
 *  again as it comes. At most ~1 MB per PID (4 KB sections), most often a few KB. */
const VERIFIED_MAX = 256;

export interface SectionReaderStats {
  sections: number;
  crcErrors: number;
  /** Sections left unfinished (continuity break, new section started early, too long). */
  dropped: number;
}

export class SectionReader {
  readonly stats: SectionReaderStats = { sections: 0, crcErrors: 0, dropped: 0 };
  private buf = Buffer.alloc(MAX_SECTION);
  /** Bytes of the current section so far; -1 = between sections. */
  private have = -1;
  private need = 0;
  private lastCc = -1;
  /** The last section that passed its CRC check (handed on again when repeated). */
  private last: Buffer | null = null;
  /** Sections that passed their CRC check, by their CRC_32 field, oldest first. */
  private verified = new Map<number, Buffer>();

  constructor(private readonly onSection: (section: Buffer) => void) {}

  /** Forget a section in progress (the source spliced or restarted). */
  reset(): void {
    if (this.have > 0) this.stats.dropped++;
    this.have = -1;
    this.lastCc = -1;
  }

  /** The packet at `o` of `b` (a packet of this reader's PID). */
  packet(b: Buffer, o: number): void {
    if ((b[o + 1]! & TEI_FLAG) !== 0 || !hasPayload(b, o)) return;
    const c = cc(b, o);
    if (c === this.lastCc) return; // a duplicate packet (13818-1 2.4.3.3)
    const continuous = this.lastCc < 0 || c === ((this.lastCc + 1) & 0x0f);
    this.lastCc = c;
    if (!continuous && this.have >= 0) this.abandon();
    let i = o + payloadOffset(b, o);
    const end = o + TS_PACKET_SIZE;
    if (i >= end) return;
    if (pusi(b, o)) {
      const start = i + 1 + b[i]!;
      if (this.have >= 0) this.feed(b, i + 1, Math.min(start, end));
      if (this.have >= 0) this.abandon(); // the new section began before this one ended
      i = start;
    } else {
      if (this.have < 0) return; // no section start known in this packet
      i = this.feed(b, i, end);
    }
    // Further sections packed after the one that ended (tolerated without PUSI too).
    while (i < end && b[i] !== STUFFING_BYTE) {
      // A section wholly inside this packet is read where it lies (PAT, PMT, most EIT p/f).
      const whole = this.wholeAt(b, i, end);
      if (whole > 0) {
        this.complete(b, i, whole);
        i += whole;
        continue;
      }
      this.have = 0;
      this.need = SECTION_PREFIX_SIZE;
      i = this.feed(b, i, end);
      if (this.have >= 0) return; // continues in the next packet
    }
  }

  /** The length of a well-formed section starting at `i` and ending by `end` (0: none). */
  private wholeAt(b: Buffer, i: number, end: number): number {
    if (end - i < SECTION_PREFIX_SIZE) return 0;
    const total = SECTION_PREFIX_SIZE + sectionLength(b, i);
    const long = (b[i + 1]! & SYNTAX_INDICATOR) !== 0;
    if (total > end - i || (long && total < LONG_HEADER_SIZE + CRC_SIZE)) return 0;
    return total;
  }

  private abandon(): void {
    this.stats.dropped++;
    this.have = -1;
  }

  /** Copy bytes [i, end) into the current section; returns where it stopped. */
  private feed(b: Buffer, i: number, end: number): number {
    while (this.have >= 0 && i < end) {
      const n = Math.min(end - i, this.need - this.have);
      b.copy(this.buf, this.have, i, i + n);
      this.have += n;
      i += n;
      if (this.have < this.need) return i;
      if (this.need === SECTION_PREFIX_SIZE) {
        const total = SECTION_PREFIX_SIZE + sectionLength(this.buf);
        const long = (this.buf[1]! & SYNTAX_INDICATOR) !== 0;
        if (total > MAX_SECTION || (long && total < LONG_HEADER_SIZE + CRC_SIZE)) {
          this.abandon();
          return end;
        }
        this.need = total;
        if (this.have < this.need) continue;
      }
      this.complete(this.buf, 0, this.need);
    }
    return i;
  }

  /** The section of `n` bytes at `at` of `src` (this.buf, or the packet it lies in whole). */
  private complete(src: Buffer, at: number, n: number): void {
    this.have = -1;
    const long = (src[at + 1]! & SYNTAX_INDICATOR) !== 0;
    // Bytes equal to a section already checked are that section again.
    const last = this.last;
    const seen =
      last && same(src, at, n, last)
        ? last
        : long
          ? this.verified.get(src.readUInt32BE(at + n - CRC_SIZE))
          : undefined;
    if (seen && (seen === last || same(src, at, n, seen))) {
      this.stats.sections++;
      this.last = seen;
      this.onSection(seen);
      return;
    }
    const s = Buffer.from(src.subarray(at, at + n));
    // Short-form sections (TDT) carry no CRC; every section this reader is used for is long.
    if (long && !sectionCrcOk(s)) {
      this.stats.crcErrors++;
      return;
    }
    this.stats.sections++;
    this.last = s;
    if (long) this.remember(s);
    this.onSection(s);
  }

  private remember(s: Buffer): void {
    const crc = s.readUInt32BE(s.length - CRC_SIZE);
    this.verified.delete(crc);
    if (this.verified.size >= VERIFIED_MAX) {
      this.verified.delete(this.verified.keys().next().value as number);
    }
    this.verified.set(crc, s);
  }
}

function same(src: Buffer, at: number, n: number, s: Buffer): boolean {
  return s.length === n && src.compare(s, 0, n, at, at + n) === 0;
}
