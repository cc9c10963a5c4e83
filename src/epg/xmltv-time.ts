// XMLTV date-times: `YYYYMMDDhhmmss ±hhmm` (trailing fields optional; no zone = UTC).

const XMLTV_TIME =
  /^(\d{4})(\d{2})(\d{2})(\d{2})?(\d{2})?(\d{2})?\s*(?:([+-])(\d{2}):?(\d{2})|(Z|UTC|GMT))?$/i;
const MAX_OFFSET_MIN = 14 * 60;

export interface XmltvTime {
  /** Unix seconds, UTC. */
  utc: number;
  /** Zone offset in seconds (east positive); 0 when the value had no zone. */
  offset: number;
}

export function parseXmltvTime(s: string | undefined): XmltvTime | undefined {
  if (!s) return undefined;
  const m = XMLTV_TIME.exec(s.trim());
  if (!m) return undefined;
  const [y, mo, d, h = '0', mi = '0', se = '0'] = m.slice(1, 7) as string[];
  const month = Number(mo);
  const day = Number(d);
  if (month < 1 || month > 12 || day < 1 || day > 31) return undefined;
  if (Number(h) > 23 || Number(mi) > 59 || Number(se) > 60) return undefined;
  let offset = 0;
  if (m[7]) {
    const min = Number(m[8]) * 60 + Number(m[9]);
    if (min > MAX_OFFSET_MIN || Number(m[9]) > 59) return undefined;
    offset = (m[7] === '-' ? -1 : 1) * min * 60;
  }
  const local = Date.UTC(Number(y), month - 1, day, Number(h), Number(mi), Number(se)) / 1000;
  if (!Number.isFinite(local)) return undefined;
  return { utc: local - offset, offset };
}

function pad(n: number, w = 2): string {
  return String(n).padStart(w, '0');
}

const SECONDS_PER_DAY = 86400;
/** "00".."99": hours, minutes and seconds without a padStart per field. */
const TWO_DIGITS = Array.from({ length: 100 }, (_, i) => pad(i));
/** Formatting is hot in the XMLTV export (two stamps per programme): the date part of a local
 *  day and the zone suffix are memoised; the caches stay small (a guide spans a few weeks). */
const MAX_MEMO = 4096;
const dayMemo = new Map<number, string>();
const zoneMemo = new Map<number, string>();

function dayPart(day: number): string {
  let s = dayMemo.get(day);
  if (s === undefined) {
    const d = new Date(day * SECONDS_PER_DAY * 1000);
    s = `${pad(d.getUTCFullYear(), 4)}${pad(d.getUTCMonth() + 1)}${pad(d.getUTCDate())}`;
    if (dayMemo.size >= MAX_MEMO) dayMemo.clear();
    dayMemo.set(day, s);
  }
  return s;
}

function zonePart(offset: number): string {
  let s = zoneMemo.get(offset);
  if (s === undefined) {
    const abs = Math.abs(Math.trunc(offset / 60));
    s = ` ${offset < 0 ? '-' : '+'}${pad(Math.floor(abs / 60))}${pad(abs % 60)}`;
    if (zoneMemo.size >= MAX_MEMO) zoneMemo.clear();
    zoneMemo.set(offset, s);
  }
  return s;
}

/** Format Unix seconds in a zone: `YYYYMMDDhhmmss +hhmm`. */
export function formatXmltvTime(utc: number, offset: number): string {
  const local = utc + offset;
  if (!Number.isSafeInteger(local)) return formatSlow(utc, offset);
  const day = Math.floor(local / SECONDS_PER_DAY);
  const sod = local - day * SECONDS_PER_DAY;
  return (
    dayPart(day) +
    TWO_DIGITS[Math.floor(sod / 3600)]! +
    TWO_DIGITS[Math.floor(sod / 60) % 60]! +
    TWO_DIGITS[sod % 60]! +
    zonePart(offset)
  );
}

/** The general path (fractional seconds): one Date per call. */
function formatSlow(utc: number, offset: number): string {
  const d = new Date((utc + offset) * 1000);
  return (
    `${pad(d.getUTCFullYear(), 4)}${pad(d.getUTCMonth() + 1)}${pad(d.getUTCDate())}` +
    `${pad(d.getUTCHours())}${pad(d.getUTCMinutes())}${pad(d.getUTCSeconds())}` +
    zonePart(offset)
  );
}
