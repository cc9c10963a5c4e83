// DVB Time and Date Table (EN 300 468 5.2.5) and Time Offset Table (5.2.6) built from a clock:
// UTC as 16-bit MJD + 24-bit BCD (Annex C). The TDT is a short section without CRC; the TOT
// carries a descriptor loop and a CRC_32. Parsing lives with the guide (src/epg/tot.ts).
import { crc32 } from './crc.ts';
import { CRC_SIZE, SECTION_PREFIX_SIZE, TDT_TABLE_ID, TOT_TABLE_ID } from './psi.ts';

const MJD_UNIX_EPOCH = 40587; // MJD of 1970-01-01
const SECONDS_PER_DAY = 86400;
const UTC_TIME_SIZE = 5;
/** section_syntax_indicator 0, reserved_future_use 1, two reserved bits 1. */
const SHORT_SECTION_FLAGS = 0x70;
const RESERVED_LENGTH = 0xf0;

function bcd(n: number): number {
  return ((Math.floor(n / 10) % 10) << 4) | (n % 10);
}

/** The 5-byte UTC_time field for `unixMs` (whole seconds, rounded down). */
export function mjdUtc(unixMs: number): Buffer {
  const unix = Math.floor(unixMs / 1000);
  const days = Math.floor(unix / SECONDS_PER_DAY);
  const rest = unix - days * SECONDS_PER_DAY;
  const mjd = days + MJD_UNIX_EPOCH;
  return Buffer.from([
    (mjd >> 8) & 0xff,
    mjd & 0xff,
    bcd(Math.floor(rest / 3600)),
    bcd(Math.floor(rest / 60) % 60),
    bcd(rest % 60),
  ]);
}

export function buildTdt(unixMs: number): Buffer {
  const s = Buffer.alloc(SECTION_PREFIX_SIZE + UTC_TIME_SIZE);
  s[0] = TDT_TABLE_ID;
  s[1] = SHORT_SECTION_FLAGS;
  s[2] = UTC_TIME_SIZE;
  mjdUtc(unixMs).copy(s, SECTION_PREFIX_SIZE);
  return s;
}

/** A TOT at `unixMs` with `descriptors` (e.g. local_time_offset_descriptors; may be empty). */
export function buildTot(unixMs: number, descriptors: Buffer = Buffer.alloc(0)): Buffer {
  const length = UTC_TIME_SIZE + 2 + descriptors.length + CRC_SIZE;
  const s = Buffer.alloc(SECTION_PREFIX_SIZE + length);
  s[0] = TOT_TABLE_ID;
  s[1] = SHORT_SECTION_FLAGS | (length >> 8);
  s[2] = length & 0xff;
  mjdUtc(unixMs).copy(s, SECTION_PREFIX_SIZE);
  const at = SECTION_PREFIX_SIZE + UTC_TIME_SIZE;
  s[at] = RESERVED_LENGTH | (descriptors.length >> 8);
  s[at + 1] = descriptors.length & 0xff;
  descriptors.copy(s, at + 2);
  s.writeUInt32BE(crc32(s, 0, s.length - CRC_SIZE), s.length - CRC_SIZE);
  return s;
}
