// EN 50221 coding, byte for byte: the transport layer's TPDUs (annex A.4.1), the session layer's
// SPDUs (7.2.7) and the application layer's APDUs (8.3) a host exchanges with a CI CAM through
// the kernel's ca device (which adds a slot and connection byte in front, ca-device framing).
import { lengthField } from '../ca-pmt.ts';

/** TPDU tags (A.4.1.13). */
export const T = {
  sb: 0x80,
  rcv: 0x81,
  createTc: 0x82,
  ctcReply: 0x83,
  deleteTc: 0x84,
  dtcReply: 0x85,
  requestTc: 0x86,
  newTc: 0x87,
  tcError: 0x77,
  dataLast: 0xa0,
  dataMore: 0xa1,
} as const;
/** SB_value: the module has data for the host (A.4.1.10). */
export const SB_DATA_AVAILABLE = 0x80;

/** SPDU tags (7.2.7, Table 14). */
export const S = {
  sessionNumber: 0x90,
  openRequest: 0x91,
  openResponse: 0x92,
  create: 0x93,
  createResponse: 0x94,
  closeRequest: 0x95,
  closeResponse: 0x96,
} as const;
/** session_status (Table 7). */
export const SESSION_OK = 0x00;
export const SESSION_NO_RESOURCE = 0xf0;

/** resource_identifier values of the public resources the host offers (Table 56). */
export const RESOURCE = {
  resourceManager: 0x00010041,
  applicationInfo: 0x00020041,
  caSupport: 0x00030041,
  dateTime: 0x00240041,
} as const;

/** apdu_tag values (Table 58). */
export const A = {
  profileEnq: 0x9f8010,
  profile: 0x9f8011,
  profileChange: 0x9f8012,
  applicationInfoEnq: 0x9f8020,
  applicationInfo: 0x9f8021,
  caInfoEnq: 0x9f8030,
  caInfo: 0x9f8031,
  caPmt: 0x9f8032,
  caPmtReply: 0x9f8033,
  dateTimeEnq: 0x9f8440,
  dateTime: 0x9f8441,
} as const;

const LENGTH_LONG_FORM = 0x80;

/** Reads an ASN.1 BER length_field at `o`: the length and where the body starts, or null. */
export function readLength(b: Uint8Array, o: number): { len: number; at: number } | null {
  if (o >= b.length) return null;
  const first = b[o]!;
  if (!(first & LENGTH_LONG_FORM)) return { len: first, at: o + 1 };
  const n = first & 0x7f;
  if (n === 0 || n > 3 || o + 1 + n > b.length) return null;
  let len = 0;
  for (let i = 0; i < n; i++) len = len * 256 + b[o + 1 + i]!;
  return { len, at: o + 1 + n };
}

// ---- transport layer ----

/** A TPDU as the ca device carries it: slot, t_c_id, then tag, length, t_c_id and the body. */
export function tpdu(slot: number, tcid: number, tag: number, body: Uint8Array = EMPTY): Buffer {
  return Buffer.concat([
    Buffer.from([slot, tcid, tag]),
    lengthField(body.length + 1),
    Buffer.from([tcid]),
    body,
  ]);
}
const EMPTY = Buffer.alloc(0);

export interface Tpdu {
  tag: number;
  tcid: number;
  body: Buffer;
}

/** What the module sent in one read of the ca device: its TPDUs (the last usually T_SB). The
 *  two framing bytes (slot, t_c_id) come first; null when the bytes are malformed. */
export function parseTpdus(read: Buffer): { slot: number; tpdus: Tpdu[] } | null {
  if (read.length < 2) return null;
  const tpdus: Tpdu[] = [];
  for (let o = 2; o < read.length; ) {
    const tag = read[o]!;
    const l = readLength(read, o + 1);
    if (!l || l.len < 1 || l.at + l.len > read.length) return null;
    tpdus.push({ tag, tcid: read[l.at]!, body: read.subarray(l.at + 1, l.at + l.len) });
    o = l.at + l.len;
  }
  return { slot: read[0]!, tpdus };
}

// ---- session layer ----

function u32(v: number): number[] {
  return [(v >>> 24) & 0xff, (v >>> 16) & 0xff, (v >>> 8) & 0xff, v & 0xff];
}

export function openSessionResponse(status: number, resource: number, session: number): Buffer {
  return Buffer.from([S.openResponse, 7, status, ...u32(resource), session >> 8, session & 0xff]);
}

export function closeSessionResponse(status: number, session: number): Buffer {
  return Buffer.from([S.closeResponse, 3, status, session >> 8, session & 0xff]);
}

/** session_number SPDU carrying `apdu`. */
export function sessionData(session: number, apdu: Buffer): Buffer {
  return Buffer.concat([Buffer.from([S.sessionNumber, 2, session >> 8, session & 0xff]), apdu]);
}

export type Spdu =
  | { tag: typeof S.openRequest; resource: number }
  | { tag: typeof S.closeRequest; session: number }
  | { tag: typeof S.sessionNumber; session: number; apdus: Apdu[] }
  | { tag: number; other: true };

export function parseSpdu(b: Buffer): Spdu | null {
  const l = readLength(b, 1);
  if (!l || l.at + l.len > b.length) return null;
  const body = b.subarray(l.at, l.at + l.len);
  switch (b[0]) {
    case S.openRequest:
      return body.length >= 4 ? { tag: S.openRequest, resource: body.readUInt32BE(0) } : null;
    case S.closeRequest:
      return body.length >= 2 ? { tag: S.closeRequest, session: body.readUInt16BE(0) } : null;
    case S.sessionNumber: {
      if (body.length < 2) return null;
      const apdus = parseApdus(b.subarray(l.at + l.len));
      return apdus ? { tag: S.sessionNumber, session: body.readUInt16BE(0), apdus } : null;
    }
    default:
      return { tag: b[0]!, other: true };
  }
}

// ---- application layer ----

export interface Apdu {
  tag: number;
  body: Buffer;
}

export function apdu(tag: number, body: Uint8Array = EMPTY): Buffer {
  return Buffer.concat([
    Buffer.from([tag >> 16, (tag >> 8) & 0xff, tag & 0xff]),
    lengthField(body.length),
    body,
  ]);
}

/** The APDUs one after another in a session_number SPDU's tail; null when malformed. */
export function parseApdus(b: Buffer): Apdu[] | null {
  const out: Apdu[] = [];
  for (let o = 0; o < b.length; ) {
    if (o + 3 > b.length) return null;
    const tag = (b[o]! << 16) | (b[o + 1]! << 8) | b[o + 2]!;
    const l = readLength(b, o + 3);
    if (!l || l.at + l.len > b.length) return null;
    out.push({ tag, body: b.subarray(l.at, l.at + l.len) });
    o = l.at + l.len;
  }
  return out;
}

/** profile (8.4.1.2): the resource ids the host offers. */
export function profile(resources: number[]): Buffer {
  return apdu(A.profile, Buffer.from(resources.flatMap(u32)));
}

export interface ApplicationInfo {
  type: number;
  manufacturer: number;
  code: number;
  menu: string;
}

/** application_info (8.4.2.2): application_type, application_manufacturer, manufacturer_code,
 *  menu_string_length and the menu string; null when too short. */
export function parseApplicationInfo(body: Buffer): ApplicationInfo | null {
  if (body.length < 6) return null;
  const n = body[5]!;
  if (body.length < 6 + n) return null;
  return {
    type: body[0]!,
    manufacturer: body.readUInt16BE(1),
    code: body.readUInt16BE(3),
    menu: body.subarray(6, 6 + n).toString('latin1'),
  };
}

/** ca_info (8.4.3.2): the CA_system_ids. */
export function parseCaInfo(body: Buffer): number[] {
  const ids: number[] = [];
  for (let o = 0; o + 2 <= body.length; o += 2) ids.push(body.readUInt16BE(o));
  return ids;
}

/** CA_enable values (Table 31). */
export const CA_ENABLE = {
  possible: 0x01,
  purchase: 0x02,
  technicalDialogue: 0x03,
  noEntitlement: 0x71,
  technical: 0x73,
} as const;

export interface CaPmtReply {
  programNumber: number;
  /** The programme-level CA_enable, or null when the reply gives it per stream only. */
  enable: number | null;
  streams: { pid: number; enable: number | null }[];
}

/** ca_pmt_reply (8.4.3.5). */
export function parseCaPmtReply(body: Buffer): CaPmtReply | null {
  if (body.length < 4) return null;
  const flag = (b: number) => (b & 0x80 ? b & 0x7f : null);
  const streams: CaPmtReply['streams'] = [];
  for (let o = 4; o + 3 <= body.length; o += 3)
    streams.push({ pid: body.readUInt16BE(o) & 0x1fff, enable: flag(body[o + 2]!) });
  return { programNumber: body.readUInt16BE(0), enable: flag(body[3]!), streams };
}

/** date_time_enq's response_interval in seconds (8.5.1.1); 0 = once. */
export function parseDateTimeEnq(body: Buffer): number {
  return body.length ? body[0]! : 0;
}

const MS_PER_DAY = 86_400_000;
/** Modified Julian Date of 1970-01-01 (EN 300 468 annex C). */
const MJD_UNIX_EPOCH = 40587;

function bcd(v: number): number {
  return ((Math.floor(v / 10) % 10) << 4) | (v % 10);
}

/** date_time (8.5.1.2) for `ms` (Unix time): UTC_time as MJD and BCD hours, minutes, seconds,
 *  no local offset. */
export function dateTime(ms: number): Buffer {
  const mjd = MJD_UNIX_EPOCH + Math.floor(ms / MS_PER_DAY);
  const d = new Date(ms);
  return apdu(
    A.dateTime,
    Buffer.from([
      mjd >> 8,
      mjd & 0xff,
      bcd(d.getUTCHours()),
      bcd(d.getUTCMinutes()),
      bcd(d.getUTCSeconds()),
    ]),
  );
}
