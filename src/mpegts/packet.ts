// MPEG-TS packets (ISO/IEC 13818-1 2.4.3): the packet size, well-known PIDs, header fields,
// adaptation-field flags, and the two packets the JS side builds (discontinuity carrier, null).

export const TS_PACKET_SIZE = 188;
export const TS_HEADER_SIZE = 4;
export const SYNC_BYTE = 0x47;
/** PIDs are 13 bits: 0 … MAX_PID, PID_COUNT of them. */
export const MAX_PID = 0x1fff;
export const PID_COUNT = MAX_PID + 1;
export const NULL_PID = MAX_PID;
export const PAT_PID = 0x0000;
export const CAT_PID = 0x0001;
/** DVB SI PIDs (EN 300 468 5.1.3). */
export const NIT_PID = 0x0010;
export const SDT_PID = 0x0011;
export const EIT_PID = 0x0012;
export const TDT_PID = 0x0014;

/** AFC bits 5..4 of byte 3: 01 payload only, 10 adaptation only, 11 both. */
export const AFC_ADAPTATION = 0x20;
export const AFC_PAYLOAD = 0x10;
/** Flags in the adaptation field's first byte after its length. */
export const AF_DISCONTINUITY = 0x80;
export const AF_RANDOM_ACCESS = 0x40;
export const AF_PCR = 0x10;
/** Header byte 1: transport_error_indicator, payload_unit_start_indicator, PID bits 12..8. */
export const TEI_FLAG = 0x80;
export const PUSI_FLAG = 0x40;
export const PID_HIGH_MASK = 0x1f;
const CC_MASK = 0x0f;

export function pid(p: Buffer, o = 0): number {
  return ((p[o + 1]! & PID_HIGH_MASK) << 8) | p[o + 2]!;
}

export function pusi(p: Buffer, o = 0): boolean {
  return (p[o + 1]! & PUSI_FLAG) !== 0;
}

export function hasPayload(p: Buffer, o = 0): boolean {
  return (p[o + 3]! & AFC_PAYLOAD) !== 0;
}

export function hasAdaptation(p: Buffer, o = 0): boolean {
  return (p[o + 3]! & AFC_ADAPTATION) !== 0;
}

export function cc(p: Buffer, o = 0): number {
  return p[o + 3]! & CC_MASK;
}

export function setCc(p: Buffer, o: number, v: number): void {
  p[o + 3] = (p[o + 3]! & 0xf0) | (v & CC_MASK);
}

/** The adaptation field carries random_access_indicator (a key frame starts here). */
export function randomAccess(p: Buffer, o = 0): boolean {
  return hasAdaptation(p, o) && p[o + 4]! > 0 && (p[o + 5]! & AF_RANDOM_ACCESS) !== 0;
}

/** Offset of the payload inside the packet (after header and adaptation field). */
export function payloadOffset(p: Buffer, o = 0): number {
  if (!hasAdaptation(p, o)) return TS_HEADER_SIZE;
  return TS_HEADER_SIZE + 1 + p[o + 4]!;
}

/**
 * Mark the packet at `o` with discontinuity_indicator. When it has no adaptation field, one is
 * inserted; the two payload bytes it displaces are returned as a second packet of the same PID
 * (payload only at its end, stuffing before), to be sent right after, so no byte is lost.
 */
export function markDiscontinuity(p: Buffer, o: number): Buffer {
  const pkt = Buffer.from(p.subarray(o, o + TS_PACKET_SIZE));
  if (hasAdaptation(pkt)) {
    if (pkt[4]! > 0) {
      pkt[5] = pkt[5]! | AF_DISCONTINUITY;
      return pkt;
    }
    // A zero-length adaptation field (one stuffing byte) has no flags byte to set; growing it
    // by one byte displaces one payload byte, handled like the no-AF case below.
  }
  if (!hasPayload(pkt)) return pkt;
  const start = payloadOffset(pkt);
  const payload = Buffer.from(pkt.subarray(start));
  const afNeeded = hasAdaptation(pkt) ? 1 : 2;
  const keep = payload.length - afNeeded;
  const first = Buffer.alloc(TS_PACKET_SIZE, 0xff);
  pkt.copy(first, 0, 0, TS_HEADER_SIZE);
  first[3] = (first[3]! & 0xcf) | AFC_ADAPTATION | AFC_PAYLOAD;
  first[4] = 1;
  first[5] = AF_DISCONTINUITY;
  payload.copy(first, 6, 0, keep);
  const tail = payload.subarray(keep);
  return Buffer.concat([first, carryPacket(pkt, tail)]);
}

/** A packet of the same PID (no PUSI, next CC) carrying `tail` after adaptation stuffing. */
function carryPacket(header: Buffer, tail: Buffer): Buffer {
  const q = Buffer.alloc(TS_PACKET_SIZE, 0xff);
  q[0] = SYNC_BYTE;
  q[1] = header[1]! & 0x9f; // keep TEI/priority bits and PID high bits, clear PUSI
  q[2] = header[2]!;
  q[3] = (header[3]! & 0xc0) | AFC_ADAPTATION | AFC_PAYLOAD | ((header[3]! + 1) & 0x0f);
  const afLen = TS_PACKET_SIZE - TS_HEADER_SIZE - 1 - tail.length;
  q[4] = afLen;
  if (afLen > 0) q[5] = 0;
  tail.copy(q, TS_PACKET_SIZE - tail.length);
  return q;
}

/** A null packet (PID 0x1FFF), used for constant-rate stuffing. */
export function nullPacket(): Buffer {
  const p = Buffer.alloc(TS_PACKET_SIZE, 0xff);
  p[0] = SYNC_BYTE;
  p[1] = NULL_PID >> 8;
  p[2] = NULL_PID & 0xff;
  p[3] = AFC_PAYLOAD; // CC of null packets is undefined (13818-1 2.4.3.3): 0 is fine
  return p;
}
