// Rewrites version_number (and so CRC_32) of PSI sections on one PID as the packets stream by,
// whether a section fits in one packet or spans several, without holding packets back: the
// version byte is changed when it passes, the CRC is recomputed on the fly over the bytes as
// sent, and written into the CRC bytes when they pass (they may straddle two packets too).
// A section whose input CRC was wrong keeps exactly the same CRC error on output.
import { CRC32_INITIAL, crc32Update } from './crc.ts';
import { hasPayload, payloadOffset, pusi, TS_PACKET_SIZE } from './packet.ts';
import {
  CRC_SIZE,
  LONG_HEADER_SIZE,
  MAX_PSI_SECTION_LENGTH,
  SECTION_PREFIX_SIZE,
  STUFFING_BYTE,
} from './psi.ts';

/** section_length of a PSI section (PAT, PMT) is at most 1021 (ISO/IEC 13818-1 2.4.4). */
const MAX_PSI_SECTION = SECTION_PREFIX_SIZE + MAX_PSI_SECTION_LENGTH;
const VERSION_BYTE = 5;

export interface PsiRewriteHooks {
  /** Output version for a section of `tableId` with input version `inVer`; null = untouched.
   *  Called before the section's CRC is known: decide, but remember nothing yet. */
  version(tableId: number, inVer: number): number | null;
  /** A whole section as sent (output version in it), whose input CRC was correct. */
  complete(section: Buffer, inVer: number): void;
}

export class PsiRewriter {
  /** Position of the next byte in the current section; -1 = between sections. */
  private pos = -1;
  private total = 0;
  private rewrite = false;
  private crcIn = 0;
  private crcOut = 0;
  private crcStored = 0;
  private inVer = 0;
  private bytes = Buffer.alloc(MAX_PSI_SECTION);

  constructor(private readonly hooks: PsiRewriteHooks) {}

  /** Forget a section in progress (its continuation will not follow: splice, reset). */
  abandon(): void {
    this.pos = -1;
  }

  /** Process the packet at `o` of `buf` in place. */
  packet(buf: Buffer, o: number): void {
    if (!hasPayload(buf, o)) return;
    let i = o + payloadOffset(buf, o);
    const end = o + TS_PACKET_SIZE;
    if (i >= end) return;
    if (pusi(buf, o)) {
      const start = i + 1 + buf[i]!;
      i = this.feed(buf, i + 1, Math.min(start, end)); // the tail of the previous section
      this.pos = -1; // whatever was not finished by now never will be
      i = start;
      while (i < end && buf[i] !== STUFFING_BYTE) {
        this.begin();
        i = this.feed(buf, i, end);
        if (this.pos >= 0) return; // continues in the next packet
      }
      return;
    }
    if (this.pos >= 0) this.feed(buf, i, end);
  }

  private begin(): void {
    this.pos = 0;
    this.total = LONG_HEADER_SIZE + CRC_SIZE; // until section_length is known
    this.rewrite = false;
    this.crcIn = CRC32_INITIAL;
    this.crcOut = CRC32_INITIAL;
    this.crcStored = 0;
  }

  /** Feed bytes [i, end) into the current section; returns where it stopped. */
  private feed(buf: Buffer, i: number, end: number): number {
    while (this.pos >= 0 && i < end) {
      const pos = this.pos;
      const b = buf[i]!;
      if (pos === 2) {
        const len = 3 + (((this.bytes[1]! & 0x0f) << 8) | b);
        if (len < LONG_HEADER_SIZE + CRC_SIZE || len > MAX_PSI_SECTION) {
          this.pos = -1; // not a PSI section we can follow; wait for the next start
          return end;
        }
        this.total = len;
      }
      let out = b;
      if (pos === VERSION_BYTE) {
        this.inVer = (b >> 1) & 0x1f;
        const v = this.hooks.version(this.bytes[0]!, this.inVer);
        if (v !== null) {
          out = (b & 0xc1) | ((v & 0x1f) << 1);
          this.rewrite = true;
        }
      }
      if (pos < this.total - CRC_SIZE) {
        this.crcIn = crc32Update(this.crcIn, b);
        this.crcOut = crc32Update(this.crcOut, out);
      } else {
        // CRC byte k: keep the input's error (if any) on top of the new CRC.
        const shift = 8 * (CRC_SIZE - 1 - (pos - (this.total - CRC_SIZE)));
        this.crcStored = ((this.crcStored << 8) | b) >>> 0;
        const want = (this.crcIn >>> shift) & 0xff;
        const made = (this.crcOut >>> shift) & 0xff;
        if (this.rewrite) out = b ^ want ^ made;
      }
      buf[i] = out;
      this.bytes[pos] = out;
      i++;
      this.pos++;
      if (this.pos === this.total) {
        this.pos = -1;
        if (this.crcStored === this.crcIn) {
          this.hooks.complete(Buffer.from(this.bytes.subarray(0, this.total)), this.inVer);
        }
      }
    }
    return i;
  }
}
