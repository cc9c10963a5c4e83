// Teletext error protection (EN 300 706 §8): Hamming 8/4 for addresses and control bits,
// Hamming 24/18 for enhancement triplets, odd parity on text bytes, and the bit reversal of
// EN 300 472 carriage (bytes in the PES are in transmission order, LSB first).

/** Hamming 8/4 code words of the nibbles 0..15 (EN 300 706 table 2 order: P1 D1 P2 D2 P3 D3 P4 D4). */
export const HAMMING_84 = [
  0x15, 0x02, 0x49, 0x5e, 0x64, 0x73, 0x38, 0x2f, 0xd0, 0xc7, 0x8c, 0x9b, 0xa1, 0xb6, 0xfd, 0xea,
];

const REVERSE = new Uint8Array(256);
const DECODE_84 = new Int8Array(256);
const PARITY_OK = new Uint8Array(256);

function popcount(v: number): number {
  let n = 0;
  for (let x = v; x; x &= x - 1) n++;
  return n;
}

for (let b = 0; b < 256; b++) {
  let r = 0;
  for (let i = 0; i < 8; i++) if (b & (1 << i)) r |= 0x80 >> i;
  REVERSE[b] = r;
  PARITY_OK[b] = popcount(b) & 1;
  // A byte within one bit of a code word decodes to it (single error corrected); else -1.
  DECODE_84[b] = -1;
  for (let n = 0; n < 16; n++) if (popcount(b ^ HAMMING_84[n]!) <= 1) DECODE_84[b] = n;
}

/** Reverse the bit order of a byte (EN 300 472 transmission order ↔ EN 300 706 order). */
export function reverseBits(b: number): number {
  return REVERSE[b & 0xff]!;
}

/** Decode a Hamming 8/4 byte to its nibble; -1 on an uncorrectable error. */
export function unham84(b: number): number {
  return DECODE_84[b & 0xff]!;
}

/** True when the byte has odd parity (a valid teletext text byte). */
export function oddParity(b: number): boolean {
  return PARITY_OK[b & 0xff] === 1;
}

/** Text byte with odd parity checked: the 7-bit character, or -1 when the parity fails. */
export function parity7(b: number): number {
  return oddParity(b) ? b & 0x7f : -1;
}

/**
 * Decode a Hamming 24/18 triplet (three bytes, first transmitted first, already in
 * EN 300 706 bit order) to its 18 data bits; -1 on an uncorrectable (double) error.
 * Bit positions 1,2,4,8,16 hold parity checks P1..P5 and bit 24 the overall parity P6;
 * every check covers the positions whose 1-based index has its bit set and is odd.
 */
export function unham2418(b0: number, b1: number, b2: number): number {
  let word = (b0 & 0xff) | ((b1 & 0xff) << 8) | ((b2 & 0xff) << 16);
  let syndrome = 0;
  for (let k = 0; k < 5; k++) {
    let p = 0;
    for (let pos = 1; pos <= 23; pos++) if (pos & (1 << k)) p ^= (word >> (pos - 1)) & 1;
    if (p === 0) syndrome |= 1 << k;
  }
  const overallOk = (popcount(word) & 1) === 1;
  if (syndrome !== 0) {
    if (overallOk) return -1; // two bits wrong: detectable, not correctable
    if (syndrome > 23) return -1;
    word ^= 1 << (syndrome - 1);
  }
  return (
    ((word >> 2) & 0x1) | // D1 at bit 3
    (((word >> 4) & 0x7) << 1) | // D2..D4 at bits 5..7
    (((word >> 8) & 0x7f) << 4) | // D5..D11 at bits 9..15
    (((word >> 16) & 0x7f) << 11) // D12..D18 at bits 17..23
  );
}

/** Encode 18 data bits as a Hamming 24/18 triplet (used by tests to craft packets). */
export function ham2418(data: number): [number, number, number] {
  let word = 0;
  word |= (data & 0x1) << 2;
  word |= ((data >> 1) & 0x7) << 4;
  word |= ((data >> 4) & 0x7f) << 8;
  word |= ((data >> 11) & 0x7f) << 16;
  for (let k = 0; k < 5; k++) {
    let p = 0;
    for (let pos = 1; pos <= 23; pos++) if (pos & (1 << k)) p ^= (word >> (pos - 1)) & 1;
    if (p === 0) word |= 1 << ((1 << k) - 1);
  }
  if ((popcount(word) & 1) === 0) word |= 1 << 23;
  return [word & 0xff, (word >> 8) & 0xff, (word >> 16) & 0xff];
}

/** Set bit 7 so the 7-bit character has odd parity (tests craft pages with it). */
export function withParity(c: number): number {
  const v = c & 0x7f;
  return popcount(v) & 1 ? v : v | 0x80;
}
