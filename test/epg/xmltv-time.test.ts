// XMLTV time stamps: parse with offsets to UTC, and the memoised formatter of the export
// against a plain Date-based rendering over random instants and zones.
import t from 'tap';
import { formatXmltvTime, parseXmltvTime } from '../../src/epg/xmltv-time.ts';

const QUARTER_HOUR = 900;

function reference(utc: number, offset: number): string {
  const d = new Date((utc + offset) * 1000);
  const p = (n: number, w = 2) => String(n).padStart(w, '0');
  const abs = Math.abs(Math.trunc(offset / 60));
  return (
    `${p(d.getUTCFullYear(), 4)}${p(d.getUTCMonth() + 1)}${p(d.getUTCDate())}` +
    `${p(d.getUTCHours())}${p(d.getUTCMinutes())}${p(d.getUTCSeconds())} ` +
    `${offset < 0 ? '-' : '+'}${p(Math.floor(abs / 60))}${p(abs % 60)}`
  );
}

t.test('formatXmltvTime matches a Date rendering', async (t) => {
  t.equal(formatXmltvTime(0, 0), '19700101000000 +0000');
  t.equal(formatXmltvTime(-1, 0), '19691231235959 +0000', 'before the epoch');
  t.equal(formatXmltvTime(Date.UTC(2026, 2, 10) / 1000, 3600), '20260310010000 +0100');
  t.equal(formatXmltvTime(Date.UTC(2026, 2, 10) / 1000, -12600), '20260309203000 -0330');
  t.equal(formatXmltvTime(Date.UTC(2024, 1, 29, 23, 59, 59) / 1000, 1), '20240301000000 +0000');
  t.equal(formatXmltvTime(1.5, 0), '19700101000001 +0000', 'fractional seconds (slow path)');
  let bad = 0;
  // A fixed linear congruential sequence: reproducible and spread over 1938..2096.
  let x = 12345;
  for (let i = 0; i < 50_000; i++) {
    x = (x * 1103515245 + 12345) % 2147483648;
    const utc = x * 2 - 1_000_000_000;
    const offset = ((x % 57) - 28) * QUARTER_HOUR;
    if (formatXmltvTime(utc, offset) !== reference(utc, offset)) bad++;
  }
  t.equal(bad, 0, 'no mismatch over 50,000 instants and zones');
});

t.test('formatted stamps parse back to the same instant', async (t) => {
  for (const [utc, offset] of [
    [1773100800, 0],
    [1773100800, 19800],
    [1773100799, -36000],
  ] as const) {
    t.same(parseXmltvTime(formatXmltvTime(utc, offset)), { utc, offset });
  }
});
