// DVB time fields (EN 300 468 Annex C): 16-bit MJD + 24-bit BCD UTC time, BCD durations.

const MJD_UNIX_EPOCH = 40587; // MJD of 1970-01-01
const SECONDS_PER_DAY = 86400;

function bcd(b: number): number {
  return (b >> 4) * 10 + (b & 0x0f);
}

function validBcd(b: number): boolean {
  return b >> 4 < 10 && (b & 0x0f) < 10;
}

/** Unix seconds from a 5-byte MJD+BCD field, or undefined when unset (all ones) or malformed. */
export function readMjdTime(buf: Uint8Array, off: number): number | undefined {
  const mjd = (buf[off]! << 8) | buf[off + 1]!;
  const h = buf[off + 2]!;
  const m = buf[off + 3]!;
  const s = buf[off + 4]!;
  if (mjd === 0xffff && h === 0xff && m === 0xff && s === 0xff) return undefined;
  if (!validBcd(h) || !validBcd(m) || !validBcd(s)) return undefined;
  if (bcd(h) > 23 || bcd(m) > 59 || bcd(s) > 59) return undefined;
  return (mjd - MJD_UNIX_EPOCH) * SECONDS_PER_DAY + bcd(h) * 3600 + bcd(m) * 60 + bcd(s);
}

/** Seconds from a 3-byte BCD hhmmss duration, or undefined when malformed. */
export function readBcdDuration(buf: Uint8Array, off: number): number | undefined {
  const h = buf[off]!;
  const m = buf[off + 1]!;
  const s = buf[off + 2]!;
  if (!validBcd(h) || !validBcd(m) || !validBcd(s)) return undefined;
  return bcd(h) * 3600 + bcd(m) * 60 + bcd(s);
}

/** Minutes from a 2-byte BCD hhmm offset. */
export function readBcdHhmm(buf: Uint8Array, off: number): number {
  return bcd(buf[off]!) * 60 + bcd(buf[off + 1]!);
}

function toBcd(n: number): number {
  return ((Math.floor(n / 10) % 10) << 4) | (n % 10);
}

/** Encode Unix seconds as the 5-byte MJD+BCD field (for tests and tools). */
export function writeMjdTime(unix: number): Buffer {
  const days = Math.floor(unix / SECONDS_PER_DAY);
  const rest = unix - days * SECONDS_PER_DAY;
  const mjd = days + MJD_UNIX_EPOCH;
  return Buffer.from([
    mjd >> 8,
    mjd & 0xff,
    toBcd(Math.floor(rest / 3600)),
    toBcd(Math.floor(rest / 60) % 60),
    toBcd(rest % 60),
  ]);
}

/** Encode seconds as a 3-byte BCD hhmmss duration. */
export function writeBcdDuration(sec: number): Buffer {
  return Buffer.from([
    toBcd(Math.floor(sec / 3600)),
    toBcd(Math.floor(sec / 60) % 60),
    toBcd(sec % 60),
  ]);
}
