// A T2-MI encoder for tests, written from ETSI TS 102 773 and EN 302 755 independently of the
// decapsulator under test: inner TS → user packets (normal mode: each UP's sync byte replaced
// by the CRC-8 of the UP before; or high efficiency mode: the sync byte left out; optional null packet deletion with a DNP byte after each UP)
// → BBFrames of a given DFL → T2-MI packets (baseband frame packets, CRC-32) → TS packets on a
// carrier PID (pointer_field where a T2-MI packet starts) inside an outer TS whose PAT and PMT
// signal the carrier with a T2MI_descriptor, paced by a PCR PID of its own.
import { crc32mpeg, packet, pat, pmt, psiPackets } from './ts-craft.ts';

const PKT = 188;

export function crc8(b: Uint8Array, start = 0, end = b.length): number {
  let c = 0;
  for (let i = start; i < end; i++) {
    c ^= b[i]!;
    for (let k = 0; k < 8; k++) c = c & 0x80 ? ((c << 1) ^ 0xd5) & 0xff : (c << 1) & 0xff;
  }
  return c;
}

export interface PlpInput {
  plp: number;
  /** The inner TS (N × 188 bytes). */
  ts: Buffer;
  /** Delete null packets (NPD: a DNP byte after each UP). */
  npd?: boolean;
  /** High efficiency mode: UPs without their sync byte slot (187 bytes), MODE 1. */
  hem?: boolean;
  /** Normal mode with ISSYI: an ISSY field after each UP, 2 bytes (ISCRshort) and 3 bytes
   *  (ISCRlong) in turn. */
  issy?: boolean;
}

/** The data field bytes of a PLP: its UPs back to back, and where each UP begins. */
function userPackets(p: PlpInput): { bytes: Buffer; starts: number[] } {
  const parts: Buffer[] = [];
  const starts: number[] = [];
  let at = 0;
  let prevCrc = 0;
  let deleted = 0;
  for (let o = 0; o + PKT <= p.ts.length; o += PKT) {
    const pk = p.ts.subarray(o, o + PKT);
    const isNull = ((pk[1]! & 0x1f) << 8) + pk[2]! === 0x1fff;
    if (p.npd && isNull && deleted < 255) {
      deleted++;
      continue;
    }
    const body = p.hem ? 0 : 1;
    const issy = p.issy && !p.hem ? (starts.length % 2 === 0 ? 2 : 3) : 0;
    const up = Buffer.alloc(body + PKT - 1 + issy + (p.npd ? 1 : 0));
    if (!p.hem) up[0] = prevCrc;
    pk.copy(up, body, 1);
    if (issy === 2) up.set([0x12, 0x34], PKT); // ISCRshort: first bit 0
    if (issy === 3) up.set([0x81, 0x23, 0x45], PKT); // ISCRlong: first bits 10
    if (p.npd) {
      up[up.length - 1] = deleted;
      deleted = 0;
    }
    prevCrc = crc8(pk, 1, PKT);
    starts.push(at);
    parts.push(up);
    at += up.length;
  }
  return { bytes: Buffer.concat(parts), starts };
}

/** BBFrames (header + data field, no padding) of `dfl` bytes each, the last one shorter. */
export function bbFrames(p: PlpInput, dfl: number): Buffer[] {
  const { bytes, starts } = userPackets(p);
  const frames: Buffer[] = [];
  let si = 0;
  for (let o = 0; o < bytes.length; o += dfl) {
    const n = Math.min(dfl, bytes.length - o);
    while (si < starts.length && starts[si]! < o) si++;
    const syncd = si < starts.length && starts[si]! < o + n ? (starts[si]! - o) * 8 : 0xffff;
    const h = Buffer.alloc(10);
    h[0] = 0xc0 | 0x20 | 0x10 | (p.issy && !p.hem ? 0x08 : 0) | (p.npd ? 0x04 : 0); // TS, SIS, CCM, ISSYI, NPD
    h[1] = 0;
    h.writeUInt16BE(p.hem ? 0 : PKT * 8, 2); // UPL (HEM: ISSY, none here)
    h.writeUInt16BE(n * 8, 4); // DFL
    h[6] = p.hem ? 0 : 0x47; // SYNC (HEM: ISSY)
    h.writeUInt16BE(syncd, 7);
    h[9] = crc8(h, 0, 9) ^ (p.hem ? 1 : 0); // CRC-8 XOR MODE
    frames.push(Buffer.concat([h, bytes.subarray(o, o + n)]));
  }
  return frames;
}

/** One T2-MI packet with its CRC-32; the payload is whole bytes. */
export function t2miPacket(type: number, count: number, payload: Buffer): Buffer {
  const h = Buffer.alloc(6);
  h[0] = type;
  h[1] = count & 0xff;
  h[2] = 0x00; // superframe_idx 0
  h[3] = 0x00; // rfu, t2mi_stream_id 0
  h.writeUInt16BE(payload.length * 8, 4);
  const body = Buffer.concat([h, payload, Buffer.alloc(4)]);
  body.writeUInt32BE(crc32mpeg(body.subarray(0, body.length - 4)), body.length - 4);
  return body;
}

export function bbFramePacket(count: number, frameIdx: number, plp: number, bb: Buffer): Buffer {
  return t2miPacket(0x00, count, Buffer.concat([Buffer.from([frameIdx, plp, 0x80]), bb]));
}

export interface EncodeOptions {
  plps: PlpInput[];
  /** Data field length of each BBFrame in bytes (default 2000). */
  dfl?: number;
  carrierPid?: number;
  /** Run time of the outer TS for its PCR (the inner streams' length). */
  seconds: number;
  /** Add a timestamp packet (type 0x20) every this many frames (default 10; 0 none). */
  otherEvery?: number;
}

/** The T2-MI packet stream: the PLPs' frames interleaved by progress, packet_count running. */
export function t2miStream(o: EncodeOptions): Buffer[] {
  const dfl = o.dfl ?? 2000;
  const queues = o.plps.map((p) => ({ plp: p.plp, frames: bbFrames(p, dfl), next: 0 }));
  const out: Buffer[] = [];
  let count = 0;
  let n = 0;
  for (;;) {
    let q: (typeof queues)[number] | undefined;
    for (const c of queues) {
      if (c.next >= c.frames.length) continue;
      if (!q || c.next / c.frames.length < q.next / q.frames.length) q = c;
    }
    if (!q) break;
    out.push(bbFramePacket(count++, q.next & 0xff, q.plp, q.frames[q.next++]!));
    const every = o.otherEvery ?? 10;
    if (every > 0 && ++n % every === 0) {
      out.push(t2miPacket(0x20, count++, Buffer.from([0, 0, 0, 0, 0, 0, 1, 0, 0, 0, 0])));
    }
  }
  return out;
}

/** T2-MI packets cut into TS packets of `pid` (pointer_field in each packet where one starts;
 *  the last packet padded by adaptation stuffing). */
export function carrierPackets(t2mi: Buffer[], pid: number, cc = { n: 0 }): Buffer[] {
  const data = Buffer.concat(t2mi);
  const starts: number[] = [];
  let at = 0;
  for (const p of t2mi) {
    starts.push(at);
    at += p.length;
  }
  const out: Buffer[] = [];
  let pos = 0;
  let si = 0;
  while (pos < data.length) {
    while (si < starts.length && starts[si]! < pos) si++;
    const start = starts[si];
    const pusi = start !== undefined && start < pos + 183;
    const room = pusi ? 183 : 184;
    const chunk = data.subarray(pos, pos + room);
    const payload = pusi ? Buffer.concat([Buffer.from([start - pos]), chunk]) : chunk;
    if (payload.length < 184) {
      // the last packet: adaptation-field stuffing, no stray bytes after the last T2-MI packet
      out.push(packet({ pid, cc: cc.n++ & 15, pusi, payload, adaptation: true }));
    } else out.push(packet({ pid, cc: cc.n++ & 15, pusi, payload }));
    pos += chunk.length;
  }
  return out;
}

/** The T2MI_descriptor (extension descriptor 0x7F, tag extension 0x11). */
export function t2miDescriptor(streamId = 0): Buffer {
  return Buffer.from([0x7f, 4, 0x11, streamId & 7, 0, 0]);
}

/** The whole outer TS: PAT/PMT (programme 1, carrier signalled), carrier packets, PCR. */
export function encodeOuter(o: EncodeOptions): Buffer {
  const carrier = o.carrierPid ?? 0x1000;
  const pcrPid = 0x1001;
  const pk = carrierPackets(t2miStream(o), carrier);
  const tables = (cc: { pat: { n: number }; pmt: { n: number } }) => [
    ...psiPackets(0, [pat([{ pnr: 1, pid: 0x100 }])], cc.pat),
    ...psiPackets(
      0x100,
      [pmt(1, pcrPid, [{ type: 0x06, pid: carrier, descriptors: t2miDescriptor() }])],
      cc.pmt,
    ),
  ];
  const cc = { pat: { n: 0 }, pmt: { n: 0 } };
  const out: Buffer[] = [];
  // Every 40 carrier packets: tables and a PCR at the packet's share of the run time.
  const total = pk.length;
  for (let i = 0; i < total; i++) {
    if (i % 40 === 0) {
      out.push(...tables(cc));
      const pcr = Math.round((i / total) * o.seconds * 27_000_000);
      out.push(packet({ pid: pcrPid, pcr }));
    }
    out.push(pk[i]!);
  }
  return Buffer.concat(out);
}
