// A forwarded OTT request as a stream's handler sees it inside a stream worker: an OttRequest
// and an OttReply (src/ott/request.ts) whose `raw` objects have the few members the handlers
// use. What the handler writes goes back to the main thread as `head`, `body` and `end`
// messages; the main thread writes it to the real response.
import { EventEmitter } from 'node:events';
import type { IncomingHttpHeaders, IncomingMessage, ServerResponse } from 'node:http';
import { setViewerQuery } from '../ott/access.ts';
import type { OttReply, OttRequest } from '../ott/request.ts';
import type { FromWorker, WireRequest } from './protocol.ts';

type Post = (m: FromWorker, transfer?: ArrayBuffer[]) => void;

/** Bytes of `b` in an ArrayBuffer of their own (a copy: `b` may be a view of a pooled block
 *  the stream reuses), ready to be transferred. */
export function ownBytes(b: Uint8Array): ArrayBuffer {
  return b.buffer.slice(b.byteOffset, b.byteOffset + b.byteLength) as ArrayBuffer;
}

/** One connection of the main thread's HTTP server, as the worker knows it: archive sessions
 *  and waits hang on its `close`. */
export class WireSocket extends EventEmitter {
  constructor(readonly remoteAddress: string) {
    super();
  }
  destroy(): void {}
}

/** The response the handler writes on; every write goes to the main thread. */
class WireResponse extends EventEmitter {
  statusCode = 200;
  headersSent = false;
  writableEnded = false;
  writableFinished = false;
  /** Bytes handed to the main thread: the worker does not see the socket's queue. */
  writableLength = 0;
  destroyed = false;
  private headers: Record<string, string | string[]> = {};

  constructor(
    private readonly rid: number,
    private readonly post: Post,
  ) {
    super();
  }

  setHeader(name: string, value: string | number | readonly string[]): this {
    this.headers[name] = Array.isArray(value) ? [...value] : String(value);
    return this;
  }
  getHeader(name: string): string | string[] | undefined {
    const k = Object.keys(this.headers).find((h) => h.toLowerCase() === name.toLowerCase());
    return k === undefined ? undefined : this.headers[k];
  }
  removeHeader(name: string): void {
    for (const k of Object.keys(this.headers))
      if (k.toLowerCase() === name.toLowerCase()) delete this.headers[k];
  }

  writeHead(status: number, headers?: Record<string, string | number | string[]>): this {
    this.statusCode = status;
    for (const [k, v] of Object.entries(headers ?? {})) this.setHeader(k, v);
    this.flushHeaders();
    return this;
  }

  flushHeaders(): void {
    if (this.headersSent || this.destroyed) return;
    this.headersSent = true;
    this.post({ t: 'head', rid: this.rid, status: this.statusCode, headers: this.headers });
  }

  write(chunk: string | Uint8Array): boolean {
    if (this.writableEnded || this.destroyed) return false;
    this.flushHeaders();
    const data = ownBytes(typeof chunk === 'string' ? Buffer.from(chunk) : chunk);
    this.post({ t: 'body', rid: this.rid, data }, [data]);
    return true;
  }

  end(chunk?: string | Uint8Array): this {
    if (this.writableEnded || this.destroyed) return this;
    this.flushHeaders();
    this.writableEnded = true;
    if (chunk !== undefined && chunk.length > 0) {
      const data = ownBytes(typeof chunk === 'string' ? Buffer.from(chunk) : chunk);
      this.post({ t: 'end', rid: this.rid, data }, [data]);
    } else this.post({ t: 'end', rid: this.rid });
    // The bytes are the main thread's now: whoever held the block for this answer lets go.
    this.writableFinished = true;
    this.emit('finish');
    this.emit('close');
    return this;
  }

  /** The client went away before the end. */
  destroy(): this {
    if (this.destroyed) return this;
    this.destroyed = true;
    if (!this.writableEnded) this.post({ t: 'end', rid: this.rid });
    this.emit('close');
    return this;
  }
}

/** Headers and body as Fastify's reply.send gives them on the main thread (its lib/reply.js):
 *  a type from the payload when none is set, utf-8 named on a JSON type, no length on an
 *  empty answer to a HEAD, no type or length on a 204, a length the handler set kept on a
 *  HEAD (it answers the GET's) and corrected on a GET. */
function settle(res: WireResponse, method: string, payload?: string | Buffer | object): void {
  const bytes = payload instanceof Uint8Array;
  const body =
    payload === undefined || typeof payload === 'string' || bytes
      ? (payload as string | Uint8Array | undefined)
      : JSON.stringify(payload);
  const status = res.statusCode;
  if (body === undefined) {
    if (status >= 200 && status !== 204 && status !== 304 && method !== 'HEAD')
      res.setHeader('Content-Length', 0);
    res.end();
    return;
  }
  if (status === 204 || status < 200) {
    res.removeHeader('content-type');
    res.removeHeader('content-length');
    res.end();
    return;
  }
  const type = res.getHeader('content-type');
  if (type === undefined) {
    const plain = typeof payload === 'string' ? 'text/plain; charset=utf-8' : undefined;
    res.setHeader(
      'Content-Type',
      bytes ? 'application/octet-stream' : (plain ?? 'application/json; charset=utf-8'),
    );
  } else if (
    !bytes &&
    /json/.test(String(type).split(';')[0]!) &&
    !/charset=/i.test(String(type))
  ) {
    res.setHeader('Content-Type', `${type}; charset=utf-8`);
  }
  const length = res.getHeader('content-length');
  const size = Buffer.byteLength(body);
  if (length === undefined || (method !== 'HEAD' && Number(length) !== size))
    res.setHeader('Content-Length', size);
  res.end(method === 'HEAD' ? undefined : body);
}

/** The request and reply for one forwarded request; `abort` is called when the main thread
 *  says the client left. */
export function wireExchange(
  rid: number,
  w: WireRequest,
  socket: WireSocket,
  post: Post,
): { req: OttRequest; reply: OttReply; abort: () => void } {
  const res = new WireResponse(rid, post);
  const raw = {
    method: w.method,
    url: w.url,
    headers: w.headers as IncomingHttpHeaders,
    socket,
  } as unknown as IncomingMessage;
  if (w.viewerQuery !== undefined) setViewerQuery(raw, w.viewerQuery);
  const req: OttRequest = {
    method: w.method,
    url: w.url,
    query: w.query,
    headers: w.headers as IncomingHttpHeaders,
    ip: w.ip,
    raw,
  };
  let hijacked = false;
  const reply: OttReply = {
    raw: res as unknown as ServerResponse,
    code(status) {
      res.statusCode = status;
      return reply;
    },
    header(name, value) {
      res.setHeader(name, value);
      return reply;
    },
    type(contentType) {
      res.setHeader('Content-Type', contentType);
      return reply;
    },
    send(payload) {
      if (hijacked || res.writableEnded) return reply;
      settle(res, w.method, payload);
      return reply;
    },
    hijack() {
      hijacked = true;
      return reply;
    },
  };
  return { req, reply, abort: () => res.destroy() };
}
