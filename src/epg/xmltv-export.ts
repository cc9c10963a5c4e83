// XMLTV output for a list of channels: written in chunks into a sink (plain and gzip bodies of
// the EPG server cache), never built as one string. Channels first, then programmes (DTD order).
import { once } from 'node:events';
import { createGzip } from 'node:zlib';
import type { EpgDatabase } from './database.ts';
import { xmltvLangCode } from './languages.ts';
import type { ChannelRef, EpgRuntime } from './runtime.ts';
import { formatXmltvTime } from './xmltv-time.ts';

/** Flush the text buffer past this many characters: large chunks mean few Buffer and zlib
 *  calls (each write into zlib crosses to the thread pool). */
const CHUNK_CHARS = 256 * 1024;
/** Let zlib fall this far behind before waiting for it: it compresses on the thread pool while
 *  the next chunks are rendered (the second core), instead of ping-ponging per chunk. */
const GZIP_QUEUE_BYTES = 2 * 1024 * 1024;
/** gzip level of the cached body: zlib's default 6. Measured on the 210k-programme guide
 *  (bench/epg-xmltv.ts, bench/RESULTS.md): level 1 saved about 5 % of the build's CPU time
 *  (compression runs on the thread pool beside the rendering) but gave a body 1.5× larger; the
 *  body is built once per EPG change and downloaded many times, so the smaller one wins. */
export const GZIP_LEVEL = 6;
// XML 1.0 forbids most control characters even as references.
const INVALID_XML = /[\u0000-\u0008\u000b\u000c\u000e-\u001f\ufffe\uffff]/g;
const NEEDS_ESCAPE = /[&<>"\u0000-\u0008\u000b\u000c\u000e-\u001f\ufffe\uffff]/;

export function escapeXml(s: string): string {
  if (!NEEDS_ESCAPE.test(s)) return s; // most texts: no copy at all
  return s
    .replace(INVALID_XML, '')
    .replace(/&/g, '&amp;')
    .replace(/</g, '&lt;')
    .replace(/>/g, '&gt;')
    .replace(/"/g, '&quot;');
}

export interface XmltvHeader {
  sourceInfoName: string;
  sourceInfoUrl: string;
}

// Columns of RawExportRow.
const ID = 0;
const START = 1;
const STOP = 2;
const LANG = 3;
const TITLE = 4;
const DESC = 5;

/** Write the document: `write` receives chunks and may return a promise (backpressure). */
export async function writeXmltv(
  rt: EpgRuntime,
  channels: ChannelRef[],
  header: XmltvHeader,
  write: (chunk: string) => void | Promise<void>,
): Promise<void> {
  const now = rt.nowSec();
  let buf = `<?xml version="1.0" encoding="UTF-8"?>\n<tv${tvAttributes(header)}>\n`;
  const flush = async (force = false) => {
    if (buf.length >= CHUNK_CHARS || (force && buf.length > 0)) {
      const out = buf;
      buf = '';
      await write(out);
    }
  };
  const present: (ChannelRef & { tz: number })[] = [];
  for (const ref of channels) {
    const db = rt.source(ref.source)?.db;
    const row = db?.channel(ref.channel);
    if (!db || !row) continue;
    present.push({ ...ref, tz: row.time_zone });
    const id = escapeXml(ref.channel);
    buf += `  <channel id="${id}">\n`;
    const names = db.channelNames(ref.channel);
    if (names.length === 0) buf += `    <display-name lang="">${id}</display-name>\n`;
    for (const n of names) {
      buf += `    <display-name lang="${xmltvLangCode(n.lang_id)}">${escapeXml(n.name)}</display-name>\n`;
    }
    if (row.icon) buf += `    <icon src="${escapeXml(row.icon)}"/>\n`;
    buf += '  </channel>\n';
    await flush();
  }
  for (const ref of present) {
    const db = rt.source(ref.source)?.db;
    if (!db) continue;
    // One channel is read completely between two awaits: the connection never stays busy in
    // an open iterator while another request uses it.
    buf += programmes(db, ref.channel, ref.tz, now);
    await flush();
  }
  buf += '</tv>\n';
  await flush(true);
}

/** The attributes of <tv>: an empty source-info-name or source-info-url is omitted (both are
 *  #IMPLIED in the DTD; `=""` would name a source called "" to the middleware). */
export function tvAttributes(header: XmltvHeader): string {
  let out = '';
  const name = escapeXml(header.sourceInfoName);
  const url = escapeXml(header.sourceInfoUrl);
  if (name) out += ` source-info-name="${name}"`;
  if (url) out += ` source-info-url="${url}"`;
  return `${out} generator-info-name="sluice"`;
}

/** The <programme> elements of one channel, from the raw rows (one per event and text). */
function programmes(db: EpgDatabase, channel: string, tz: number, now: number): string {
  const ratings = new Map<number, string>();
  for (const [eventId, system, value] of db.ratingsRaw(channel, now)) {
    // A rating imported without a system keeps none (the DTD's system is #IMPLIED): system=""
    // would name a rating system called "" to the middleware.
    const attr = system ? ` system="${escapeXml(system)}"` : '';
    const xml = `    <rating${attr}>\n      <value>${escapeXml(value)}</value>\n    </rating>\n`;
    ratings.set(eventId, (ratings.get(eventId) ?? '') + xml);
  }
  const ch = escapeXml(channel);
  let out = '';
  let current = -1;
  let start = 0;
  let stop = 0;
  let titles = '';
  let descs = '';
  // A programme starts where the previous one stopped: reuse that stamp.
  let lastStop = Number.NaN;
  let lastStopText = '';
  const stamp = (t: number): string => {
    if (t === lastStop) return lastStopText;
    return formatXmltvTime(t, tz);
  };
  const emit = () => {
    if (titles === '') return; // the DTD needs at least one title
    const startText = stamp(start);
    const stopText = formatXmltvTime(stop, tz);
    lastStop = stop;
    lastStopText = stopText;
    out += `  <programme start="${startText}" stop="${stopText}" channel="${ch}">\n${titles}${descs}${ratings.get(current) ?? ''}  </programme>\n`;
  };
  for (const r of db.exportRowsRaw(channel, now)) {
    if (r[ID] !== current) {
      if (current !== -1) emit();
      current = r[ID];
      start = r[START];
      stop = r[STOP];
      titles = '';
      descs = '';
    }
    const lang = xmltvLangCode(r[LANG] ?? 0);
    const title = r[TITLE];
    const desc = r[DESC];
    if (title) titles += `    <title lang="${lang}">${escapeXml(title)}</title>\n`;
    if (desc) descs += `    <desc lang="${lang}">${escapeXml(desc)}</desc>\n`;
  }
  if (current !== -1) emit();
  return out;
}

/** Both bodies of a cache entry. The plain body stays a list of chunks (no second, contiguous
 *  copy of a document that can be tens of MB); `plain` joins them on demand (tests, tools). */
export class XmltvBodies {
  constructor(
    readonly plainChunks: Buffer[],
    readonly plainLength: number,
    readonly gzip: Buffer,
  ) {}

  get plain(): Buffer {
    return Buffer.concat(this.plainChunks, this.plainLength);
  }
}

/** Build both bodies: the text is rendered in large chunks, each kept for the plain body and
 *  fed into gzip, which runs on the thread pool while the next chunk is rendered. */
export async function buildXmltvBodies(
  rt: EpgRuntime,
  channels: ChannelRef[],
  header: XmltvHeader,
  gzipLevel = GZIP_LEVEL,
): Promise<XmltvBodies> {
  const plain: Buffer[] = [];
  let plainLength = 0;
  const zipped: Buffer[] = [];
  const gz = createGzip({ level: gzipLevel });
  gz.on('data', (c: Buffer) => zipped.push(c));
  const ended = once(gz, 'end');
  await writeXmltv(rt, channels, header, async (chunk) => {
    const b = Buffer.from(chunk, 'utf8');
    plain.push(b);
    plainLength += b.length;
    gz.write(b);
    if (gz.writableLength > GZIP_QUEUE_BYTES) await once(gz, 'drain');
  });
  gz.end();
  await ended;
  return new XmltvBodies(plain, plainLength, Buffer.concat(zipped));
}
