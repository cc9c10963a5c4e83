// PES packet headers (ISO/IEC 13818-1 2.4.3.6): the start code prefix, PES_packet_length, and
// the 33-bit PTS/DTS (90 kHz) of the optional header.

/** packet_start_code_prefix (00 00 01), stream_id and PES_packet_length. */
export const PES_PREFIX_SIZE = 6;
/** Through PES_header_data_length: the optional fields start here. */
export const PES_HEADER_FIXED_SIZE = 9;
/** PTS_DTS_flags in the second flags byte (offset 7): '10' PTS only, '11' PTS and DTS. */
export const PES_PTS_FLAG = 0x80;
export const PES_PTS_DTS_FLAGS = 0xc0;
const FLAGS_BYTE = 7;
const HEADER_DATA_LENGTH_BYTE = 8;
const TIMESTAMP_SIZE = 5;

/** Bytes [o, o+3) are the packet_start_code_prefix 00 00 01. */
export function isPesStart(b: Uint8Array, o = 0): boolean {
  return b[o] === 0 && b[o + 1] === 0 && b[o + 2] === 1;
}

/** PES_packet_length of the PES starting at `o` (0: unbounded, allowed for video). */
export function pesPacketLength(b: Uint8Array, o = 0): number {
  return (b[o + 4]! << 8) | b[o + 5]!;
}

/** Offset (from the PES start) of the payload, after the optional header fields. */
export function pesPayloadOffset(b: Uint8Array, o = 0): number {
  return PES_HEADER_FIXED_SIZE + b[o + HEADER_DATA_LENGTH_BYTE]!;
}

/** PTS_DTS_flags of the PES starting at `o`. */
export function pesTimestampFlags(b: Uint8Array, o = 0): number {
  return b[o + FLAGS_BYTE]! & PES_PTS_DTS_FLAGS;
}

/** Offsets of PTS and DTS (when present) from the PES start. */
export const PES_PTS_OFFSET = PES_HEADER_FIXED_SIZE;
export const PES_DTS_OFFSET = PES_HEADER_FIXED_SIZE + TIMESTAMP_SIZE;

/** 33-bit PTS/DTS from the 5-byte PES field at `o` (marker bits ignored). */
export function readTimestamp(b: Uint8Array, o: number): number {
  return (
    (b[o]! & 0x0e) * 536870912 + // << 29
    ((b[o + 1]! << 7) | (b[o + 2]! >> 1)) * 32768 + // << 15
    ((b[o + 3]! << 7) | (b[o + 4]! >> 1))
  );
}
