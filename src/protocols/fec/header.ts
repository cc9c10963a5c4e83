// SMPTE 2022-1 / Pro-MPEG CoP3 FEC packets: an RTP header whose P, X, CC and M bits carry the
// XOR of the protected packets' bits, a 16-byte FEC header (RFC 2733 extended), then the XOR of
// the protected packets' bodies (everything after their 12-byte fixed RTP header).
//
//   0                   1                   2                   3
//   0 1 2 3 4 5 6 7 8 9 0 1 2 3 4 5 6 7 8 9 0 1 2 3 4 5 6 7 8 9 0 1
//  |      SNBase low bits          |        Length recovery        |
//  |E| PT recovery |                    Mask (0)                   |
//  |                          TS recovery                          |
//  |N|D|type |index|    Offset     |      NA       |SNBase ext bits|
//
// D = 0 column (Offset L, NA D), D = 1 row (Offset 1, NA L). `xor` is the non-standard
// prompeg-header-xor byte, XORed over the 16 header bytes (0 = standard).

export const RTP_HEADER_SIZE = 12;
export const FEC_HEADER_SIZE = 16;
/** The FEC flows' RTP payload type (dynamic; ffmpeg and GStreamer send 96). */
export const FEC_PAYLOAD_TYPE = 96;
/** SMPTE 2022-1 limits: L (columns) and D (rows) at most 20 each, L × D at most 100. */
export const MAX_L = 20;
export const MAX_D = 20;
export const MAX_MATRIX = 100;

export interface FecPacket {
  /** true: row FEC (D bit 1); false: column FEC. */
  row: boolean;
  /** RTP sequence number of the FEC packet in its own flow. */
  seq: number;
  /** First media sequence number protected. */
  snBase: number;
  /** Distance between protected packets: L for a column, 1 for a row. */
  offset: number;
  /** Number of packets protected: D for a column, L for a row. */
  na: number;
  lengthRecovery: number;
  ptRecovery: number;
  tsRecovery: number;
  /** P, X, CC recovery bits (the low 6 bits of the first RTP header byte). */
  pxccRecovery: number;
  /** M recovery bit. */
  markerRecovery: number;
  /** The XOR of the protected bodies (a view of the datagram). */
  payload: Buffer;
}

/** Parse a FEC datagram; returns the reason as a string when it is not one we can use. */
export function parseFec(d: Buffer, xor = 0): FecPacket | string {
  if (d.length < RTP_HEADER_SIZE + FEC_HEADER_SIZE) return 'shorter than RTP + FEC headers';
  if (d[0]! >> 6 !== 2) return 'not RTP version 2';
  const h = RTP_HEADER_SIZE;
  const b = (i: number) => d[h + i]! ^ xor;
  if ((b(4) & 0x80) === 0) return 'E bit clear';
  if (b(5) !== 0 || b(6) !== 0 || b(7) !== 0) return 'mask not 0';
  const b12 = b(12);
  if (b12 & 0x80) return 'N bit set';
  const row = (b12 & 0x40) !== 0;
  if ((b12 & 0x38) !== 0) return 'FEC type not XOR';
  if ((b12 & 0x07) !== 0) return 'index not 0';
  const offset = b(13);
  const na = b(14);
  if (na < 1 || offset < 1) return 'offset or NA is 0';
  if (row) {
    if (offset !== 1) return `row FEC with offset ${offset}`;
    if (na > MAX_L) return `row of ${na} packets (L at most ${MAX_L})`;
  } else {
    if (offset > MAX_L) return `column offset ${offset} (L at most ${MAX_L})`;
    if (na > MAX_D) return `column of ${na} packets (D at most ${MAX_D})`;
    if (offset * na > MAX_MATRIX) return `L × D = ${offset * na} (at most ${MAX_MATRIX})`;
  }
  return {
    row,
    seq: d.readUInt16BE(2),
    snBase: (b(0) << 8) | b(1),
    lengthRecovery: (b(2) << 8) | b(3),
    ptRecovery: b(4) & 0x7f,
    tsRecovery: ((b(8) << 24) | (b(9) << 16) | (b(10) << 8) | b(11)) >>> 0,
    offset,
    na,
    pxccRecovery: d[0]! & 0x3f,
    markerRecovery: d[1]! >> 7,
    payload: d.subarray(h + FEC_HEADER_SIZE),
  };
}

/** What an encoder has accumulated for one row or column. */
export interface FecFields {
  row: boolean;
  seq: number;
  /** RTP timestamp of the FEC packet itself. */
  timestamp: number;
  ssrc: number;
  snBase: number;
  offset: number;
  na: number;
  lengthRecovery: number;
  ptRecovery: number;
  tsRecovery: number;
  pxccRecovery: number;
  markerRecovery: number;
  payload: Buffer;
}

/** Build a FEC datagram (RTP header, FEC header XORed with `xor`, payload). */
export function buildFec(f: FecFields, xor = 0): Buffer {
  const d = Buffer.allocUnsafe(RTP_HEADER_SIZE + FEC_HEADER_SIZE + f.payload.length);
  d[0] = 0x80 | (f.pxccRecovery & 0x3f);
  d[1] = ((f.markerRecovery & 1) << 7) | FEC_PAYLOAD_TYPE;
  d.writeUInt16BE(f.seq & 0xffff, 2);
  d.writeUInt32BE(f.timestamp >>> 0, 4);
  d.writeUInt32BE(f.ssrc >>> 0, 8);
  const h = RTP_HEADER_SIZE;
  d.writeUInt16BE(f.snBase & 0xffff, h);
  d.writeUInt16BE(f.lengthRecovery & 0xffff, h + 2);
  d[h + 4] = 0x80 | (f.ptRecovery & 0x7f);
  d[h + 5] = d[h + 6] = d[h + 7] = 0;
  d.writeUInt32BE(f.tsRecovery >>> 0, h + 8);
  d[h + 12] = f.row ? 0x40 : 0;
  d[h + 13] = f.offset;
  d[h + 14] = f.na;
  d[h + 15] = 0;
  if (xor) for (let i = h; i < h + FEC_HEADER_SIZE; i++) d[i]! ^= xor;
  f.payload.copy(d, h + FEC_HEADER_SIZE);
  return d;
}

/** dst[i] ^= src[i] for i < n (n ≤ both lengths); whole 32-bit words when both are aligned. */
export function xorInto(dst: Buffer, src: Buffer, n: number): void {
  let i = 0;
  if (((dst.byteOffset | src.byteOffset) & 3) === 0 && n >= 16) {
    const words = n >>> 2;
    const a = new Int32Array(dst.buffer, dst.byteOffset, words);
    const b = new Int32Array(src.buffer, src.byteOffset, words);
    for (let w = 0; w < words; w++) a[w]! ^= b[w]!;
    i = words << 2;
  }
  for (; i < n; i++) dst[i]! ^= src[i]!;
}
