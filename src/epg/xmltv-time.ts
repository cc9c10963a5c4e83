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

/** Format Unix seconds in a zone: `YYYYMMDDhhmmss +hhmm`. */
export function formatXmltvTime(utc: number, offset: number): string {
  const d = new Date((utc + offset) * 1000);
  const sign = offset < 0 ? '-' : '+';
  const abs = Math.abs(Math.trunc(offset / 60));
  return (
    `${pad(d.getUTCFullYear(), 4)}${pad(d.getUTCMonth() + 1)}${pad(d.getUTCDate())}` +
    `${pad(d.getUTCHours())}${pad(d.getUTCMinutes())}${pad(d.getUTCSeconds())} ` +
    `${sign}${pad(Math.floor(abs / 60))}${pad(abs % 60)}`
  );
}
