// Serving OTT responses from memory: Cache-Control as each caller's policy says
// (./cache-policy.ts), CORS for browser players, HEAD, single byte ranges on segments, and waiting
// for a store change with a bound (blocking playlist reload, preload hints).
import type { ServerResponse } from 'node:http';
import type { Clock } from '../util/clock.ts';
import { documentFor } from './access.ts';
import { PRIVATE_DOCUMENT } from './cache-policy.ts';
import type { OttReply, OttRequest } from './request.ts';
import type { SegmentStore } from './store.ts';

/** Responses no cache may keep: errors, the clock (`time`), HTTP-TS. Documents and segments
 *  take theirs from the server's policy (./cache-policy.ts). */
export const CACHE_LIVE = 'no-cache';
export const TYPE_M3U8 = 'application/vnd.apple.mpegurl';
export const TYPE_MPD = 'application/dash+xml';
export const TYPE_TS = 'video/mp2t';
export const TYPE_MP4 = 'video/mp4';
export const TYPE_M4S = 'video/iso.segment';
export const TYPE_VTT = 'text/vtt';

/**
 * Fast path for a whole 200 response from memory (no Range, not HEAD): the headers go out as
 * one object literal of a fixed shape (no spread, no per-request key lookups) and the body
 * with one `end()` on the raw response, past Fastify's send pipeline (hooks on the request
 * still ran; onResponse still runs when it finishes).
 */
const EXPOSE_HEADERS = 'Content-Length, Content-Range, Date';

/** Write a whole 200 response of `data` on a raw response (see above). */
export function writeWhole(
  res: ServerResponse,
  data: Buffer,
  type: string,
  cache: string,
  ranges: boolean,
): void {
  const length = String(data.length);
  res.writeHead(
    200,
    ranges
      ? {
          'Access-Control-Allow-Origin': '*',
          'Access-Control-Expose-Headers': EXPOSE_HEADERS,
          'Cache-Control': cache,
          'Content-Type': type,
          'Accept-Ranges': 'bytes',
          'Content-Length': length,
        }
      : {
          'Access-Control-Allow-Origin': '*',
          'Access-Control-Expose-Headers': EXPOSE_HEADERS,
          'Cache-Control': cache,
          'Content-Type': type,
          'Content-Length': length,
        },
  );
  res.end(data);
}

/**
 * The status line and headers `writeWhole` sends for `length` bytes, as the native live engine
 * publishes them (src/ott/live-publish.ts): same names, order and values; the engine adds
 * Date, Connection and Keep-Alive as Node's server does. `fromZero`: what `sendBytes` sends for
 * `Range: bytes=0-` (206, the whole body, its Content-Range); only where ranges apply and
 * `length` > 0.
 */
export function wholeHead(
  length: number,
  type: string,
  cache: string,
  ranges: boolean,
  fromZero = false,
): Buffer {
  return Buffer.from(
    (fromZero ? 'HTTP/1.1 206 Partial Content\r\n' : 'HTTP/1.1 200 OK\r\n') +
      'Access-Control-Allow-Origin: *\r\n' +
      `Access-Control-Expose-Headers: ${EXPOSE_HEADERS}\r\n` +
      `Cache-Control: ${cache}\r\n` +
      `Content-Type: ${type}\r\n` +
      (ranges ? 'Accept-Ranges: bytes\r\n' : '') +
      (fromZero ? `Content-Range: bytes 0-${length - 1}/${length}\r\n` : '') +
      `Content-Length: ${length}\r\n`,
    'latin1',
  );
}

function sendWhole(reply: OttReply, data: Buffer, type: string, cache: string, ranges: boolean) {
  reply.hijack();
  writeWhole(reply.raw, data, type, cache, ranges);
  return reply;
}

function cors(reply: OttReply): void {
  reply.header('Access-Control-Allow-Origin', '*');
  reply.header('Access-Control-Expose-Headers', EXPOSE_HEADERS);
}

export function sendText(
  req: OttRequest,
  reply: OttReply,
  body: string | Buffer,
  type: string,
  cache = CACHE_LIVE,
): OttReply {
  let data = typeof body === 'string' ? Buffer.from(body) : body;
  let control = cache;
  // A gated viewer's credentials go on to every URI the document names (./access.ts): that
  // copy is the viewer's own, which no shared cache may keep (./cache-policy.ts).
  if (type === TYPE_M3U8 || type === TYPE_MPD) {
    const mine = documentFor(req.raw, data, type === TYPE_MPD);
    if (mine !== data) {
      data = mine;
      control = PRIVATE_DOCUMENT;
    }
  }
  return sendBytes(req, reply, data, type, control, false);
}

/**
 * Rendered documents (playlists) per key, kept until the stores they were built from change:
 * a store's `version` is part of the key, so a reload between two segments is a map lookup.
 */
export class RenderCache {
  private entries = new Map<string, Buffer>();
  private static readonly MAX_ENTRIES = 64;

  get(key: string, render: () => string | undefined): Buffer | undefined {
    const hit = this.entries.get(key);
    if (hit) return hit;
    const text = render();
    if (text === undefined) return undefined;
    const body = Buffer.from(text);
    if (this.entries.size >= RenderCache.MAX_ENTRIES) this.entries.clear();
    this.entries.set(key, body);
    return body;
  }
}

export function sendNotFound(reply: OttReply, message: string): OttReply {
  cors(reply);
  reply.header('Cache-Control', CACHE_LIVE);
  return reply.code(404).type('application/json').send({ status: 404, message });
}

export function sendError(reply: OttReply, code: number, message: string): OttReply {
  cors(reply);
  reply.header('Cache-Control', CACHE_LIVE);
  return reply.code(code).type('application/json').send({ status: code, message });
}

/** Parse a single `bytes=a-b` range; null when absent, 'invalid' when unsatisfiable. */
export function parseRange(
  header: string | undefined,
  size: number,
): { start: number; end: number } | null | 'invalid' {
  if (!header) return null;
  const m = /^bytes=(\d*)-(\d*)$/.exec(header.trim());
  if (!m || (m[1] === '' && m[2] === '')) return 'invalid';
  let start: number;
  let end: number;
  if (m[1] === '') {
    const suffix = Number(m[2]);
    if (suffix === 0) return 'invalid';
    start = Math.max(0, size - suffix);
    end = size - 1;
  } else {
    start = Number(m[1]);
    end = m[2] === '' ? size - 1 : Math.min(Number(m[2]), size - 1);
  }
  if (start > end || start >= size) return 'invalid';
  return { start, end };
}

export function sendBytes(
  req: OttRequest,
  reply: OttReply,
  data: Buffer,
  type: string,
  cache: string,
  ranges = true,
): OttReply {
  if (req.method === 'GET' && (!ranges || !req.headers.range))
    return sendWhole(reply, data, type, cache, ranges);
  cors(reply);
  reply.header('Cache-Control', cache);
  reply.type(type);
  let body = data;
  if (ranges) {
    reply.header('Accept-Ranges', 'bytes');
    const r = parseRange(req.headers.range, data.length);
    if (r === 'invalid') {
      reply.header('Content-Range', `bytes */${data.length}`);
      return reply.code(416).send();
    }
    if (r) {
      body = data.subarray(r.start, r.end + 1);
      reply.code(206).header('Content-Range', `bytes ${r.start}-${r.end}/${data.length}`);
    }
  }
  reply.header('Content-Length', body.length);
  if (req.method === 'HEAD') return reply.send();
  return reply.send(body);
}

/** Resolve true once `ready()` holds, false after `timeoutMs`; listens to store changes. */
export function waitFor(
  stores: SegmentStore[],
  ready: () => boolean,
  clock: Clock,
  timeoutMs: number,
): Promise<boolean> {
  if (ready()) return Promise.resolve(true);
  return new Promise((resolve) => {
    const offs: (() => void)[] = [];
    let settled = false;
    const done = (ok: boolean) => {
      if (settled) return;
      settled = true;
      timer.cancel();
      for (const off of offs) off();
      resolve(ok);
    };
    const timer = clock.setTimeout(() => done(false), timeoutMs);
    for (const s of stores) offs.push(s.onChange(() => ready() && done(true)));
  });
}
