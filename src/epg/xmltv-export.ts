// XMLTV output for a list of channels: written in chunks into a sink (plain and gzip bodies of
// the EPG server cache), never built as one string. Channels first, then programmes (DTD order).
import { once } from 'node:events';
import { createGzip } from 'node:zlib';
import type { ExportRow } from './database.ts';
import { xmltvLangCode } from './languages.ts';
import type { ChannelRef, EpgRuntime } from './runtime.ts';
import { formatXmltvTime } from './xmltv-time.ts';

/** Flush the text buffer to the sink past this many characters. */
const CHUNK_CHARS = 64 * 1024;
// XML 1.0 forbids most control characters even as references.
const INVALID_XML = /[\u0000-\u0008\u000b\u000c\u000e-\u001f\ufffe\uffff]/g;

export function escapeXml(s: string): string {
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

/** Write the document: `write` receives chunks and may return a promise (backpressure). */
export async function writeXmltv(
  rt: EpgRuntime,
  channels: ChannelRef[],
  header: XmltvHeader,
  write: (chunk: string) => void | Promise<void>,
): Promise<void> {
  const now = rt.nowSec();
  let buf =
    '<?xml version="1.0" encoding="UTF-8"?>\n' +
    `<tv source-info-name="${escapeXml(header.sourceInfoName)}" source-info-url="${escapeXml(header.sourceInfoUrl)}" generator-info-name="sluice">\n`;
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
    // Read one channel completely before yielding: the connection must not stay busy in an
    // open iterator while other requests use it.
    const rows: ExportRow[] = [...db.exportRows(ref.channel, now)];
    const ratings = db.ratings(ref.channel, now);
    buf += programmes(ref.channel, ref.tz, rows, ratings);
    await flush();
  }
  buf += '</tv>\n';
  await flush(true);
}

function programmes(
  channel: string,
  tz: number,
  rows: ExportRow[],
  ratings: Map<number, { system: string; value: string }[]>,
): string {
  let out = '';
  const ch = escapeXml(channel);
  for (let i = 0; i < rows.length; ) {
    const first = rows[i]!;
    let j = i;
    const texts: ExportRow[] = [];
    while (j < rows.length && rows[j]!.id === first.id) texts.push(rows[j++]!);
    i = j;
    const titles = texts.filter((t) => t.title);
    if (titles.length === 0) continue; // the DTD needs at least one title
    out += `  <programme start="${formatXmltvTime(first.start_time, tz)}" stop="${formatXmltvTime(first.stop_time, tz)}" channel="${ch}">\n`;
    for (const t of titles) {
      out += `    <title lang="${xmltvLangCode(t.lang_id ?? 0)}">${escapeXml(t.title!)}</title>\n`;
    }
    for (const t of texts) {
      if (t.desc)
        out += `    <desc lang="${xmltvLangCode(t.lang_id ?? 0)}">${escapeXml(t.desc)}</desc>\n`;
    }
    for (const r of ratings.get(first.id) ?? []) {
      out += `    <rating system="${escapeXml(r.system)}">\n      <value>${escapeXml(r.value)}</value>\n    </rating>\n`;
    }
    out += '  </programme>\n';
  }
  return out;
}

export interface XmltvBodies {
  plain: Buffer;
  gzip: Buffer;
}

/** Build both bodies of a cache entry: the text is fed chunk by chunk into gzip. */
export async function buildXmltvBodies(
  rt: EpgRuntime,
  channels: ChannelRef[],
  header: XmltvHeader,
): Promise<XmltvBodies> {
  const plain: Buffer[] = [];
  const zipped: Buffer[] = [];
  const gz = createGzip();
  gz.on('data', (c: Buffer) => zipped.push(c));
  const ended = once(gz, 'end');
  await writeXmltv(rt, channels, header, async (chunk) => {
    const b = Buffer.from(chunk, 'utf8');
    plain.push(b);
    if (!gz.write(b)) await once(gz, 'drain');
  });
  gz.end();
  await ended;
  return { plain: Buffer.concat(plain), gzip: Buffer.concat(zipped) };
}
