// Finding a real server's OTT paths and asking them with any method: `crawl` follows every URI
// the playlists and MPDs of a name hand out (media playlists, segments, parts, init, subtitles,
// archive chunks); `ask` sends one raw request from a chosen local address and reads, bounded in
// bytes and time, whatever comes back.
import net from 'node:net';

/** One response as it came off the wire (`status` 0: the server closed without answering). */
export interface RawAnswer {
  status: number;
  headers: Map<string, string>;
  /** Everything after the header block (chunk framing included), at most ASK_MAX_BYTES. */
  body: Buffer;
  /** Still sending when the byte or time bound cut it off (a stream, or a hang). */
  cut: boolean;
}

const ASK_MAX_BYTES = 256 * 1024;
const ASK_MAX_MS = 3000;

/** `method target` over a fresh connection from `localAddress`, with `Connection: close`. */
export function ask(
  port: number,
  method: string,
  target: string,
  headers: Record<string, string> = {},
  localAddress = '127.0.0.1',
): Promise<RawAnswer> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    let size = 0;
    let cut = false;
    const s = net.connect({ port, host: '127.0.0.1', localAddress });
    const stop = () => {
      cut = true;
      s.destroy();
    };
    const timer = setTimeout(stop, ASK_MAX_MS);
    s.on('connect', () => {
      const extra = Object.entries(headers).map(([k, v]) => `${k}: ${v}\r\n`);
      s.write(`${method} ${target} HTTP/1.1\r\nHost: 127.0.0.1\r\n${extra.join('')}`);
      s.write('Connection: close\r\n\r\n');
    });
    s.on('data', (d: Buffer) => {
      chunks.push(d);
      size += d.length;
      if (size > ASK_MAX_BYTES) stop();
    });
    s.on('error', (err: NodeJS.ErrnoException) => {
      // A reset after the request is an answer too (nothing more came).
      if (err.code !== 'ECONNRESET') reject(err);
    });
    s.on('close', () => {
      clearTimeout(timer);
      const all = Buffer.concat(chunks);
      const end = all.indexOf('\r\n\r\n');
      if (end < 0) return resolve({ status: 0, headers: new Map(), body: all, cut });
      const lines = all.subarray(0, end).toString('latin1').split('\r\n');
      const headers = new Map<string, string>();
      for (const l of lines.slice(1)) {
        const i = l.indexOf(':');
        headers.set(l.slice(0, i).toLowerCase(), l.slice(i + 1).trim());
      }
      const status = Number(lines[0]!.split(' ')[1]);
      resolve({ status, headers, body: all.subarray(end + 4), cut });
    });
  });
}

/** Where a crawled path came from: a live document, or an archive one (`?t=`, aliases). */
export interface Found {
  path: string;
  archive: boolean;
}

/** Documents are followed at most this deep (master → media playlist → segments). */
const MAX_DEPTH = 4;
/** Paths kept per shape (digits masked): two of each segment kind, not the whole window. */
const PER_SHAPE = 2;

const shape = (path: string) => path.replace(/[0-9a-f]{6,}/g, 'h').replace(/\d+/g, '#');

/** The URIs an HLS playlist names: URI lines and `URI="…"` attributes. */
function playlistUris(text: string): string[] {
  const out: string[] = [];
  for (const line of text.split('\n')) {
    if (!line.startsWith('#')) {
      if (line.trim()) out.push(line.trim());
      continue;
    }
    for (const m of line.matchAll(/URI="([^"]*)"/g)) out.push(m[1]!);
  }
  return out;
}

/** The URLs an MPD names: SegmentURLs, and each SegmentTemplate's init and first segment. */
function manifestUris(text: string): string[] {
  const xml = text.replace(/&amp;/g, '&');
  const out: string[] = [];
  for (const m of xml.matchAll(/<SegmentTemplate ([^>]*)>/g)) {
    const attr = (name: string) => new RegExp(`\\b${name}="([^"]*)"`).exec(m[1]!)?.[1];
    const start = attr('startNumber') ?? '1';
    const init = attr('initialization');
    const media = attr('media');
    if (init) out.push(init);
    if (media) out.push(media.replace('$Number$', start));
  }
  for (const m of xml.matchAll(/<SegmentURL [^>]*\bmedia="([^"]*)"/g)) out.push(m[1]!);
  return out;
}

/**
 * Every path reachable from `seeds` (relative to `/{name}/`) by following the documents served
 * to an anonymous loopback GET, at most PER_SHAPE per shape. Seeds are kept whatever they
 * answer; documents are those with an HLS or DASH type.
 */
export async function crawl(base: string, name: string, seeds: string[]): Promise<Found[]> {
  const found = new Map<string, Found>();
  const shapes = new Map<string, number>();
  const root = `${base}/${name}/`;
  const visit = async (url: URL, archive: boolean, depth: number, seed: boolean) => {
    const path = url.pathname + url.search;
    if (found.has(path)) return;
    const s = shape(path);
    if (!seed && (shapes.get(s) ?? 0) >= PER_SHAPE) return;
    shapes.set(s, (shapes.get(s) ?? 0) + 1);
    const inArchive = archive || /[?&](t|epg|utc)=/.test(url.search);
    found.set(path, { path, archive: inArchive });
    if (depth >= MAX_DEPTH) return;
    const r = await fetch(url, { signal: AbortSignal.timeout(10_000) });
    const type = r.headers.get('content-type') ?? '';
    const isPlaylist = type.includes('mpegurl');
    if (!r.ok || !(isPlaylist || type.includes('dash+xml'))) {
      await r.body?.cancel();
      return;
    }
    const text = await r.text();
    for (const uri of isPlaylist ? playlistUris(text) : manifestUris(text))
      await visit(new URL(uri, url), inArchive, depth + 1, false);
  };
  for (const seed of seeds) await visit(new URL(seed, root), false, 0, true);
  return [...found.values()];
}
