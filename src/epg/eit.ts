// EIT section parsing (EN 300 468 §5.2.4): present/following and schedule, actual and other
// (table ids 0x4E–0x6F), with short event, extended event (multi-part) and parental rating.
import {
  EIT_PF_ACTUAL_TABLE_ID,
  EIT_SCHEDULE_ACTUAL_FIRST_TABLE_ID,
  EIT_SCHEDULE_ACTUAL_LAST_TABLE_ID,
  EIT_SCHEDULE_OTHER_LAST_TABLE_ID,
} from '../mpegts/psi.ts';
import { readBcdDuration, readMjdTime } from './dvb-time.ts';
import { decodeDvbText } from './text.ts';

const DESC_SHORT_EVENT = 0x4d;
const DESC_EXTENDED_EVENT = 0x4e;
const DESC_PARENTAL_RATING = 0x55;
const HEADER_LEN = 14; // bytes before the event loop
const CRC_LEN = 4;
const EVENT_HEADER_LEN = 12;
/** Parental rating values 0x01..0x0F mean "minimum age = value + 3". */
const RATING_AGE_OFFSET = 3;
const RATING_MAX_DEFINED = 0x0f;

export interface EitText {
  /** ISO 639-2 code as sent (lower-cased). */
  lang: string;
  title: string;
  /** Short event text followed by the assembled extended description. */
  desc: string;
}

export interface EitEvent {
  eventId: number;
  /** Unix seconds UTC, undefined when the start is unset. */
  start: number | undefined;
  duration: number | undefined;
  runningStatus: number;
  texts: EitText[];
  ratings: { country: string; age: number }[];
}

export interface EitSection {
  tableId: number;
  /** table 0x4E or 0x50–0x5F: the transport stream carrying the section. */
  actual: boolean;
  serviceId: number;
  version: number;
  currentNext: boolean;
  sectionNumber: number;
  lastSectionNumber: number;
  tsid: number;
  onid: number;
  segmentLastSectionNumber: number;
  lastTableId: number;
  events: EitEvent[];
}

export function isEitTable(tableId: number): boolean {
  return tableId >= EIT_PF_ACTUAL_TABLE_ID && tableId <= EIT_SCHEDULE_OTHER_LAST_TABLE_ID;
}

export function isActualTable(tableId: number): boolean {
  return (
    tableId === EIT_PF_ACTUAL_TABLE_ID ||
    (tableId >= EIT_SCHEDULE_ACTUAL_FIRST_TABLE_ID && tableId <= EIT_SCHEDULE_ACTUAL_LAST_TABLE_ID)
  );
}

/** Parse one complete EIT section (CRC already checked by the caller). Throws on a section
 *  whose lengths do not add up. */
export function parseEitSection(buf: Uint8Array): EitSection {
  const tableId = buf[0]!;
  if (!isEitTable(tableId)) throw new Error(`not an EIT table id: 0x${tableId.toString(16)}`);
  const sectionLength = ((buf[1]! & 0x0f) << 8) | buf[2]!;
  const end = 3 + sectionLength - CRC_LEN;
  if (sectionLength < HEADER_LEN - 3 + CRC_LEN || end > buf.length) {
    throw new Error('EIT section length out of range');
  }
  const sec: EitSection = {
    tableId,
    actual: isActualTable(tableId),
    serviceId: (buf[3]! << 8) | buf[4]!,
    version: (buf[5]! >> 1) & 0x1f,
    currentNext: (buf[5]! & 1) === 1,
    sectionNumber: buf[6]!,
    lastSectionNumber: buf[7]!,
    tsid: (buf[8]! << 8) | buf[9]!,
    onid: (buf[10]! << 8) | buf[11]!,
    segmentLastSectionNumber: buf[12]!,
    lastTableId: buf[13]!,
    events: [],
  };
  let off = HEADER_LEN;
  while (off + EVENT_HEADER_LEN <= end) {
    const loopLen = ((buf[off + 10]! & 0x0f) << 8) | buf[off + 11]!;
    const dEnd = off + EVENT_HEADER_LEN + loopLen;
    if (dEnd > end) throw new Error('EIT descriptor loop overruns the section');
    const ev: EitEvent = {
      eventId: (buf[off]! << 8) | buf[off + 1]!,
      start: readMjdTime(buf, off + 2),
      duration: readBcdDuration(buf, off + 7),
      runningStatus: buf[off + 10]! >> 5,
      texts: [],
      ratings: [],
    };
    parseDescriptors(buf.subarray(off + EVENT_HEADER_LEN, dEnd), ev);
    sec.events.push(ev);
    off = dEnd;
  }
  return sec;
}

interface ExtendedPart {
  number: number;
  last: number;
  items: [Uint8Array, Uint8Array][];
  text: Uint8Array;
}

function parseDescriptors(d: Uint8Array, ev: EitEvent): void {
  const shorts = new Map<string, { title: string; text: string }>();
  const ext = new Map<string, ExtendedPart[]>();
  let off = 0;
  while (off + 2 <= d.length) {
    const tag = d[off]!;
    const len = d[off + 1]!;
    const body = d.subarray(off + 2, off + 2 + len);
    off += 2 + len;
    if (body.length < len) break;
    if (tag === DESC_SHORT_EVENT && len >= 5) {
      const lang = langCode(body, 0);
      const nameLen = body[3]!;
      const name = body.subarray(4, 4 + nameLen);
      const textLen = body[4 + nameLen] ?? 0;
      const text = body.subarray(5 + nameLen, 5 + nameLen + textLen);
      shorts.set(lang, { title: decodeDvbText(name), text: decodeDvbText(text) });
    } else if (tag === DESC_EXTENDED_EVENT && len >= 6) {
      const lang = langCode(body, 1);
      const itemsLen = body[4]!;
      const items: [Uint8Array, Uint8Array][] = [];
      let i = 5;
      const itemsEnd = Math.min(5 + itemsLen, body.length);
      while (i + 1 <= itemsEnd) {
        const dl = body[i]!;
        const desc = body.subarray(i + 1, i + 1 + dl);
        const il = body[i + 1 + dl] ?? 0;
        const item = body.subarray(i + 2 + dl, i + 2 + dl + il);
        items.push([desc, item]);
        i += 2 + dl + il;
      }
      const textLen = body[itemsEnd] ?? 0;
      const text = body.subarray(itemsEnd + 1, itemsEnd + 1 + textLen);
      let parts = ext.get(lang);
      if (!parts) {
        parts = [];
        ext.set(lang, parts);
      }
      parts.push({ number: body[0]! >> 4, last: body[0]! & 0x0f, items, text });
    } else if (tag === DESC_PARENTAL_RATING) {
      for (let i = 0; i + 4 <= body.length; i += 4) {
        const r = body[i + 3]!;
        if (r >= 1 && r <= RATING_MAX_DEFINED) {
          ev.ratings.push({ country: ascii(body.subarray(i, i + 3)), age: r + RATING_AGE_OFFSET });
        }
      }
    }
  }
  const langs = new Set([...shorts.keys(), ...ext.keys()]);
  for (const lang of langs) {
    const s = shorts.get(lang);
    const extended = assembleExtended(ext.get(lang) ?? []);
    const desc = [s?.text ?? '', extended].filter((x) => x !== '').join('\n');
    ev.texts.push({ lang, title: s?.title ?? '', desc });
  }
}

/** Join the parts of an extended description in descriptor_number order. The text bytes are
 *  concatenated before decoding (a multi-byte character may straddle two descriptors), with the
 *  repeated table selector of later parts removed. */
function assembleExtended(parts: ExtendedPart[]): string {
  if (parts.length === 0) return '';
  parts.sort((a, b) => a.number - b.number);
  const seen = new Set<number>();
  const texts: Uint8Array[] = [];
  const lines: string[] = [];
  let selector: Uint8Array | undefined;
  for (const p of parts) {
    if (seen.has(p.number)) continue;
    seen.add(p.number);
    for (const [d, it] of p.items) lines.push(`${decodeDvbText(d)}: ${decodeDvbText(it)}`);
    if (p.text.length === 0) continue;
    const sel = selectorOf(p.text);
    if (selector === undefined) {
      selector = sel;
      texts.push(p.text);
    } else if (sel.length > 0 && Buffer.from(sel).equals(Buffer.from(selector))) {
      texts.push(p.text.subarray(sel.length));
    } else texts.push(p.text);
  }
  const text = decodeDvbText(Buffer.concat(texts));
  return [text, ...lines].filter((x) => x !== '').join('\n');
}

function selectorOf(t: Uint8Array): Uint8Array {
  const b = t[0]!;
  if (b >= 0x20) return t.subarray(0, 0);
  if (b === 0x10) return t.subarray(0, 3);
  return t.subarray(0, 1);
}

function langCode(b: Uint8Array, off: number): string {
  return ascii(b.subarray(off, off + 3)).toLowerCase();
}

function ascii(b: Uint8Array): string {
  return String.fromCharCode(...b);
}
