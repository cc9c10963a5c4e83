// CRC-32/MPEG-2 of PSI/SI sections (ISO/IEC 13818-1 Annex A): polynomial 0x04C11DB7, MSB
// first, initial value 0xFFFFFFFF, no reflection and no final XOR. A whole section including
// its CRC_32 field sums to 0.

const POLYNOMIAL = 0x04c11db7;
const INITIAL = 0xffffffff;
const TOP_BIT = 0x80000000;

const TABLE = (() => {
  const t = new Uint32Array(256);
  for (let i = 0; i < 256; i++) {
    let c = i << 24;
    for (let k = 0; k < 8; k++) c = c & TOP_BIT ? (c << 1) ^ POLYNOMIAL : c << 1;
    t[i] = c >>> 0;
  }
  return t;
})();

/** The value a running CRC starts from (feed bytes with crc32Update). */
export const CRC32_INITIAL = INITIAL;

/** CRC-32/MPEG-2 of bytes [start, end) of `buf`. */
export function crc32(buf: Uint8Array, start = 0, end = buf.length): number {
  let crc = INITIAL;
  for (let i = start; i < end; i++) crc = crc32Update(crc, buf[i]!);
  return crc >>> 0;
}

/** One byte more into a running CRC-32/MPEG-2 (start from CRC32_INITIAL, no final XOR). */
export function crc32Update(crc: number, byte: number): number {
  return ((crc << 8) ^ TABLE[((crc >>> 24) ^ byte) & 0xff]!) >>> 0;
}
