// Reassembles the PSI/SI sections of one PID from its TS packets (ISO/IEC 13818-1 2.4.4):
// pointer_field, several sections in one packet, a section spanning packets, stuffing after
// the last one. A continuity break or a section longer than allowed drops the section in
// progress; a section whose CRC_32 fails is counted and not handed out. Sections come out as
// copies the caller may keep.
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
      this.have = 0;
      this.need = SECTION_PREFIX_SIZE;
      i = this.feed(b, i, end);
      if (this.have >= 0) return; // continues in the next packet
    }
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
      this.complete();
    }
    return i;
  }

  private complete(): void {
    this.have = -1;
    // Tables repeat (a PAT or PMT ten times a second): bytes equal to the last good section are
    // that section again, handed on without a copy or a CRC check.
    const last = this.last;
    if (
      last &&
      last.length === this.need &&
      this.buf.compare(last, 0, last.length, 0, this.need) === 0
    ) {
      this.stats.sections++;
      this.onSection(last);
      return;
    }
    const s = Buffer.from(this.buf.subarray(0, this.need));
    // Short-form sections (TDT) carry no CRC; every section this reader is used for is long.
    if ((s[1]! & SYNTAX_INDICATOR) !== 0 && !sectionCrcOk(s)) {
      this.stats.crcErrors++;
      return;
    }
    this.stats.sections++;
    this.last = s;
    this.onSection(s);
  }
}
