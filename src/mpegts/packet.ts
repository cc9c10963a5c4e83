// Small MPEG-TS helpers for the JS side of the stream engine (splicer, HTTP-TS, RTP): packet
// header fields, adaptation-field flags, PSI section CRC. Heavy scanning lives in the native core.

export const TS_PACKET = 188;
export const SYNC_BYTE = 0x47;
export const NULL_PID = 0x1fff;
export const PAT_PID = 0;
const TS_HEADER = 4;

/** AFC bits 5..4 of byte 3: 01 payload only, 10 adaptation only, 11 both. */
const AFC_ADAPTATION = 0x20;
const AFC_PAYLOAD = 0x10;
const AF_DISCONTINUITY = 0x80;
const AF_RANDOM_ACCESS = 0x40;

export function pid(p: Buffer, o = 0): number {
  return ((p[o + 1]! & 0x1f) << 8) | p[o + 2]!;
}

export function pusi(p: Buffer, o = 0): boolean {
  return (p[o + 1]! & 0x40) !== 0;
}

export function hasPayload(p: Buffer, o = 0): boolean {
  return (p[o + 3]! & AFC_PAYLOAD) !== 0;
}

export function hasAdaptation(p: Buffer, o = 0): boolean {
  return (p[o + 3]! & AFC_ADAPTATION) !== 0;
}

export function cc(p: Buffer, o = 0): number {
  return p[o + 3]! & 0x0f;
}

export function setCc(p: Buffer, o: number, v: number): void {
  p[o + 3] = (p[o + 3]! & 0xf0) | (v & 0x0f);
}

/** The adaptation field carries random_access_indicator (a key frame starts here). */
export function randomAccess(p: Buffer, o = 0): boolean {
  return hasAdaptation(p, o) && p[o + 4]! > 0 && (p[o + 5]! & AF_RANDOM_ACCESS) !== 0;
}

/** Offset of the payload inside the packet (after header and adaptation field). */
export function payloadOffset(p: Buffer, o = 0): number {
  if (!hasAdaptation(p, o)) return TS_HEADER;
  return TS_HEADER + 1 + p[o + 4]!;
}

/**
 * Mark the packet at `o` with discontinuity_indicator. When it has no adaptation field, one is
 * inserted; the two payload bytes it displaces are returned as a second packet of the same PID
 * (payload only at its end, stuffing before), to be sent right after, so no byte is lost.
 */
export function markDiscontinuity(p: Buffer, o: number): Buffer {
  const pkt = Buffer.from(p.subarray(o, o + TS_PACKET));
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
  const first = Buffer.alloc(TS_PACKET, 0xff);
  pkt.copy(first, 0, 0, TS_HEADER);
  first[3] = (first[3]! & 0xcf) | AFC_ADAPTATION | AFC_PAYLOAD;
  first[4] = 1;
  first[5] = AF_DISCONTINUITY;
  payload.copy(first, 6, 0, keep);
  const tail = payload.subarray(keep);
  return Buffer.concat([first, carryPacket(pkt, tail)]);
}

/** A packet of the same PID (no PUSI, next CC) carrying `tail` after adaptation stuffing. */
function carryPacket(header: Buffer, tail: Buffer): Buffer {
  const q = Buffer.alloc(TS_PACKET, 0xff);
  q[0] = SYNC_BYTE;
  q[1] = header[1]! & 0x9f; // keep TEI/priority bits and PID high bits, clear PUSI
  q[2] = header[2]!;
  q[3] = (header[3]! & 0xc0) | AFC_ADAPTATION | AFC_PAYLOAD | ((header[3]! + 1) & 0x0f);
  const afLen = TS_PACKET - TS_HEADER - 1 - tail.length;
  q[4] = afLen;
  if (afLen > 0) q[5] = 0;
  tail.copy(q, TS_PACKET - tail.length);
  return q;
}

/** A null packet (PID 0x1FFF), used for constant-rate stuffing. */
export function nullPacket(): Buffer {
  const p = Buffer.alloc(TS_PACKET, 0xff);
  p[0] = SYNC_BYTE;
  p[1] = 0x1f;
  p[2] = 0xff;
  p[3] = AFC_PAYLOAD;
  return p;
}

const CRC_TABLE = (() => {
  const t = new Uint32Array(256);
  for (let i = 0; i < 256; i++) {
    let c = i << 24;
    for (let k = 0; k < 8; k++) c = c & 0x80000000 ? (c << 1) ^ 0x04c11db7 : c << 1;
    t[i] = c >>> 0;
  }
  return t;
})();

/** CRC-32/MPEG-2 as used by PSI sections. */
export function crc32(buf: Buffer, start = 0, end = buf.length): number {
  let crc = 0xffffffff;
  for (let i = start; i < end; i++) crc = crc32Update(crc, buf[i]!);
  return crc >>> 0;
}

/** One byte more into a running CRC-32/MPEG-2 (start from 0xFFFFFFFF, no final XOR). */
export function crc32Update(crc: number, byte: number): number {
  return ((crc << 8) ^ CRC_TABLE[((crc >>> 24) ^ byte) & 0xff]!) >>> 0;
}

/** Parse a PAT section body into programme number → PMT PID (network PID 0 skipped). */
export function parsePat(section: Buffer): Map<number, number> {
  const out = new Map<number, number>();
  const len = ((section[1]! & 0x0f) << 8) | section[2]!;
  const end = 3 + len - 4;
  for (let i = 8; i + 4 <= end; i += 4) {
    const pnr = (section[i]! << 8) | section[i + 1]!;
    const pmt = ((section[i + 2]! & 0x1f) << 8) | section[i + 3]!;
    if (pnr !== 0) out.set(pnr, pmt);
  }
  return out;
}

/** stream_type values of video elementary streams (ISO/IEC 13818-1 Table 2-34 and later). */
const VIDEO_STREAM_TYPES = new Set([
  0x01, // MPEG-1 video
  0x02, // MPEG-2 video
  0x10, // MPEG-4 part 2
  0x1b, // H.264
  0x20, // H.264 MVC sub-bitstream
  0x24, // HEVC
  0x33, // VVC
  0x42, // AVS
  0xea, // VC-1
]);

/** PIDs of the video elementary streams listed in a PMT section (table_id through CRC). */
export function pmtVideoPids(section: Buffer): number[] {
  const len = ((section[1]! & 0x0f) << 8) | section[2]!;
  const end = Math.min(section.length, 3 + len) - 4;
  const infoLen = ((section[10]! & 0x0f) << 8) | section[11]!;
  const out: number[] = [];
  for (let i = 12 + infoLen; i + 5 <= end; ) {
    const type = section[i]!;
    const esPid = ((section[i + 1]! & 0x1f) << 8) | section[i + 2]!;
    const esInfo = ((section[i + 3]! & 0x0f) << 8) | section[i + 4]!;
    if (VIDEO_STREAM_TYPES.has(type)) out.push(esPid);
    i += 5 + esInfo;
  }
  return out;
}
