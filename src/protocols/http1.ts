// HTTP/1.1 client messages (RFC 9112), no I/O: a GET request's bytes, and a response reader fed
// the bytes of a connection as they come — the head parsed (status, headers), the body handed
// on as views of the bytes fed (Content-Length, chunked, or up to the close), the end reported,
// and whether the connection may carry the next request. Used by the hls input's HTTP client
// for plain http:// (src/inputs/hls/http1-pool.ts).

/** A response head bigger than this is refused. */
export const MAX_HEAD_BYTES = 64 * 1024;
/** A chunk-size line (with extensions) longer than this is refused. */
const MAX_CHUNK_LINE = 1024;
const CR = 0x0d;
const LF = 0x0a;

export class Http1Error extends Error {
  override name = 'Http1Error';
}

export interface ResponseHead {
  status: number;
  /** Header names in lower case; repeated headers joined with ", ". */
  headers: Map<string, string>;
}

export interface ResponseEvents {
  head(h: ResponseHead): void;
  /** Body bytes: a view of the bytes fed, valid during the call. */
  body(chunk: Buffer): void;
  end(): void;
}

/** The bytes of a GET request. `headers` must not hold CR or LF (checked). */
export function getRequest(target: string, host: string, headers: [string, string][]): string {
  let s = `GET ${target} HTTP/1.1\r\nHost: ${host}\r\n`;
  for (const [k, v] of headers) s += `${k}: ${v}\r\n`;
  if (
    LINE_BREAK.test(target) ||
    LINE_BREAK.test(host) ||
    headers.some((h) => LINE_BREAK.test(h.join('')))
  ) {
    throw new Http1Error('request line or header with a line break');
  }
  return `${s}\r\n`;
}

const LINE_BREAK = /[\r\n]/;

type Stage =
  | 'head'
  | 'length'
  | 'chunk-size'
  | 'chunk-data'
  | 'chunk-crlf'
  | 'trailer'
  | 'close'
  | 'done';

/** One response at a time; `reset()` before the next one on the same connection. */
export class ResponseReader {
  private stage: Stage = 'head';
  private head: Buffer[] = [];
  private headLen = 0;
  private left = 0;
  private line = '';
  private keepAlive = true;

  constructor(private readonly ev: ResponseEvents) {}

  /** The response ended and the connection may carry another request. */
  get reusable(): boolean {
    return this.stage === 'done' && this.keepAlive;
  }

  get done(): boolean {
    return this.stage === 'done';
  }

  /** Whether any byte of the response was read (a kept-alive connection the server had closed
   *  fails before one). */
  get started(): boolean {
    return this.stage !== 'head' || this.headLen > 0;
  }

  /** Bytes of a Content-Length body still to come (0 in any other stage): the caller may read
   *  them straight into their place and report them with bodyRead. */
  get bodyLeft(): number {
    return this.stage === 'length' ? this.left : 0;
  }

  /** `n` (≤ bodyLeft) bytes of the Content-Length body were taken: read into place by the
   *  caller (no `body` event for them), or fed and handed on; `end` when they were the last. */
  bodyRead(n: number): void {
    if (n > this.bodyLeft) throw new Http1Error('more body bytes than announced');
    this.left -= n;
    if (this.left === 0) {
      this.stage = 'done';
      this.ev.end();
    }
  }

  /** The next request is a GET (a HEAD would have no body). */
  reset(): void {
    this.stage = 'head';
    this.head = [];
    this.headLen = 0;
    this.left = 0;
    this.line = '';
    this.keepAlive = true;
  }

  /** Bytes from the connection. Returns how many were taken: bytes after the end of the
   *  response are not (a server must not send any before the next request). */
  feed(b: Buffer): number {
    let o = 0;
    while (o < b.length && this.stage !== 'done') {
      switch (this.stage) {
        case 'head':
          o = this.readHead(b, o);
          break;
        case 'length': {
          const n = Math.min(this.left, b.length - o);
          this.ev.body(b.subarray(o, o + n));
          o += n;
          this.bodyRead(n);
          break;
        }
        case 'close':
          this.ev.body(b.subarray(o));
          o = b.length;
          break;
        case 'chunk-size':
        case 'trailer':
          o = this.readLine(b, o);
          break;
        case 'chunk-data': {
          const n = Math.min(this.left, b.length - o);
          this.left -= n;
          const chunk = b.subarray(o, o + n);
          o += n;
          if (this.left === 0) {
            this.stage = 'chunk-crlf';
            this.line = '';
          }
          this.ev.body(chunk);
          break;
        }
        case 'chunk-crlf':
          o = this.readLine(b, o);
          break;
      }
    }
    return o;
  }

  /** The connection closed: the end of a close-delimited body, else a truncated response. */
  eof(): void {
    if (this.stage === 'close') {
      this.stage = 'done';
      this.keepAlive = false;
      this.ev.end();
      return;
    }
    if (this.stage !== 'done') throw new Http1Error('origin closed the connection early');
  }

  private readHead(b: Buffer, o: number): number {
    // Look for the blank line, also across the end of the previous bytes.
    const prev = this.headLen;
    const rest = b.subarray(o);
    this.head.push(rest);
    this.headLen += rest.length;
    const all = this.head.length === 1 ? rest : Buffer.concat(this.head);
    const from = Math.max(0, prev - 3);
    const end = all.indexOf('\r\n\r\n', from, 'latin1');
    if (end < 0) {
      if (this.headLen > MAX_HEAD_BYTES) throw new Http1Error('response head over 64 KiB');
      // The fed bytes are valid during the call only: keep a copy.
      this.head = [Buffer.from(all)];
      return b.length;
    }
    if (end > MAX_HEAD_BYTES) throw new Http1Error('response head over 64 KiB');
    const taken = end + 4 - prev;
    this.head = [];
    this.headLen = 0;
    const h = parseHead(all.toString('latin1', 0, end));
    if (h.status >= 100 && h.status < 200) return o + taken; // interim: the real one follows
    this.startBody(h);
    this.ev.head(h);
    if (this.stage === 'done') this.ev.end();
    return o + taken;
  }

  private startBody(h: ResponseHead & { version: string }): void {
    const conn = (h.headers.get('connection') ?? '').toLowerCase();
    this.keepAlive = h.version === '1.1' ? !/\bclose\b/.test(conn) : /\bkeep-alive\b/.test(conn);
    const te = (h.headers.get('transfer-encoding') ?? '').toLowerCase();
    const cl = h.headers.get('content-length');
    if (h.status === 204 || h.status === 304) {
      this.stage = 'done';
    } else if (te !== '' && te !== 'identity') {
      if (!/(^|,)\s*chunked\s*$/.test(te)) throw new Http1Error(`transfer-encoding ${te}`);
      this.stage = 'chunk-size';
      this.line = '';
    } else if (cl !== undefined) {
      if (!/^\d{1,15}$/.test(cl.trim())) throw new Http1Error(`bad content-length ${cl}`);
      this.left = Number(cl.trim());
      this.stage = this.left === 0 ? 'done' : 'length';
    } else {
      this.stage = 'close';
      this.keepAlive = false;
    }
  }

  /** A line of the chunked framing (size, the CRLF after data, trailers). */
  private readLine(b: Buffer, o: number): number {
    const lf = b.indexOf(LF, o);
    const upto = lf < 0 ? b.length : lf;
    this.line += b.toString('latin1', o, upto);
    if (this.line.length > MAX_CHUNK_LINE) throw new Http1Error('chunk line too long');
    if (lf < 0) return b.length;
    let line = this.line;
    this.line = '';
    if (line.charCodeAt(line.length - 1) === CR) line = line.slice(0, -1);
    if (this.stage === 'chunk-crlf') {
      if (line !== '') throw new Http1Error('chunk data longer than its size');
      this.stage = 'chunk-size';
    } else if (this.stage === 'chunk-size') {
      const m = /^([0-9a-fA-F]{1,12})\s*(;.*)?$/.exec(line);
      if (!m) throw new Http1Error('bad chunk size');
      this.left = Number.parseInt(m[1]!, 16);
      this.stage = this.left === 0 ? 'trailer' : 'chunk-data';
    } else if (line === '') {
      this.stage = 'done';
      this.ev.end();
    }
    return lf + 1;
  }
}

function parseHead(text: string): ResponseHead & { version: string } {
  const lines = text.split('\r\n');
  const m = /^HTTP\/1\.([01]) (\d{3})(?: .*)?$/.exec(lines[0] ?? '');
  if (!m) throw new Http1Error(`not an HTTP/1.x response: ${(lines[0] ?? '').slice(0, 40)}`);
  const headers = new Map<string, string>();
  for (let i = 1; i < lines.length; i++) {
    const l = lines[i]!;
    const c = l.indexOf(':');
    if (c <= 0) throw new Http1Error('malformed response header');
    const k = l.slice(0, c).trim().toLowerCase();
    const v = l.slice(c + 1).trim();
    const had = headers.get(k);
    headers.set(k, had === undefined ? v : `${had}, ${v}`);
  }
  return { version: `1.${m[1]}`, status: Number(m[2]), headers };
}
