// RTSP/1.0 (RFC 2326) messages, no I/O: request writing and an incremental reader of what a
// server sends on the control connection — responses, requests from the server (e.g. a
// server-side OPTIONS or ANNOUNCE) and, with TCP transport, `$`-framed interleaved RTP/RTCP
// (RFC 2326 10.12). Bounded: a header block over MAX_HEADER_BYTES or a body over MAX_BODY_BYTES
// is refused with RtspProtocolError before it is buffered whole.

/** The header block (status line + headers) of one message is at most this long. */
export const MAX_HEADER_BYTES = 64 * 1024;
/** A message body (an SDP) is at most this long. */
export const MAX_BODY_BYTES = 1024 * 1024;
export const RTSP_VERSION = 'RTSP/1.0';

export class RtspProtocolError extends Error {}

export interface RtspResponse {
  kind: 'response';
  status: number;
  reason: string;
  /** Header names in lower case; a repeated header's values joined with ", " (WWW-Authenticate
   *  challenges are kept apart in `challenges`). */
  headers: Record<string, string>;
  /** Each WWW-Authenticate header as sent. */
  challenges: string[];
  body: Buffer;
}

export interface RtspRequestIn {
  kind: 'request';
  method: string;
  uri: string;
  headers: Record<string, string>;
  body: Buffer;
}

export interface InterleavedFrame {
  kind: 'interleaved';
  channel: number;
  data: Buffer;
}

export type RtspMessage = RtspResponse | RtspRequestIn | InterleavedFrame;

/** One request, header names as given. `CSeq` is the caller's to set. */
export function writeRequest(
  method: string,
  uri: string,
  headers: Record<string, string | number>,
  body?: Buffer,
): Buffer {
  let s = `${method} ${uri} ${RTSP_VERSION}\r\n`;
  for (const [k, v] of Object.entries(headers)) {
    const value = String(v);
    if (/[\r\n]/.test(k) || /[\r\n]/.test(value)) {
      throw new RtspProtocolError(`header ${k} holds a line break`);
    }
    s += `${k}: ${value}\r\n`;
  }
  if (body && body.length > 0) s += `Content-Length: ${body.length}\r\n`;
  s += '\r\n';
  const head = Buffer.from(s, 'utf8');
  return body && body.length > 0 ? Buffer.concat([head, body]) : head;
}

/**
 * Feed bytes of the control connection with push(); complete messages come out of the
 * callback in order. Throws RtspProtocolError on anything out of bounds or malformed; the
 * connection is then beyond repair and is closed by the owner.
 */
export class RtspReader {
  private buf: Buffer = Buffer.alloc(0);
  /** Header block parsed, waiting for `bodyLength` bytes of body. */
  private pending: { msg: RtspResponse | RtspRequestIn; bodyLength: number } | null = null;

  constructor(private readonly emit: (m: RtspMessage) => void) {}

  /** Bytes held waiting for the rest of a message. */
  get buffered(): number {
    return this.buf.length;
  }

  push(chunk: Buffer): void {
    this.buf = this.buf.length === 0 ? chunk : Buffer.concat([this.buf, chunk]);
    let off = 0;
    const b = this.buf;
    for (;;) {
      if (this.pending) {
        const need = this.pending.bodyLength;
        if (b.length - off < need) break;
        const msg = this.pending.msg;
        msg.body = Buffer.from(b.subarray(off, off + need));
        off += need;
        this.pending = null;
        this.emit(msg);
        continue;
      }
      if (off >= b.length) break;
      if (b[off] === 0x24) {
        // '$' channel(1) length(2) data
        if (b.length - off < 4) break;
        const len = b.readUInt16BE(off + 2);
        if (b.length - off < 4 + len) break;
        const channel = b[off + 1]!;
        const data = b.subarray(off + 4, off + 4 + len);
        off += 4 + len;
        this.emit({ kind: 'interleaved', channel, data });
        continue;
      }
      // Blank lines between messages are allowed.
      if (b[off] === 0x0d || b[off] === 0x0a) {
        off++;
        continue;
      }
      const end = b.indexOf('\r\n\r\n', off, 'latin1');
      if (end < 0) {
        if (b.length - off > MAX_HEADER_BYTES) {
          throw new RtspProtocolError(`header block over ${MAX_HEADER_BYTES} bytes`);
        }
        break;
      }
      if (end - off > MAX_HEADER_BYTES) {
        throw new RtspProtocolError(`header block over ${MAX_HEADER_BYTES} bytes`);
      }
      const head = b.toString('latin1', off, end);
      off = end + 4;
      const { msg, bodyLength } = parseHead(head);
      if (bodyLength > 0) this.pending = { msg, bodyLength };
      else this.emit(msg);
    }
    this.buf = off >= b.length ? Buffer.alloc(0) : b.subarray(off);
    // Keep the remainder in its own small buffer rather than pinning a large chunk.
    if (this.buf.length > 0 && this.buf.length < 4096 && b.length > 65536) {
      this.buf = Buffer.from(this.buf);
    }
  }
}

function parseHead(head: string): {
  msg: RtspResponse | RtspRequestIn;
  bodyLength: number;
} {
  const lines = head.split('\r\n');
  const first = lines[0] ?? '';
  const headers: Record<string, string> = {};
  const challenges: string[] = [];
  for (let i = 1; i < lines.length; i++) {
    const line = lines[i]!;
    const c = line.indexOf(':');
    if (c <= 0) {
      throw new RtspProtocolError(`malformed header line ${JSON.stringify(line.slice(0, 80))}`);
    }
    const name = line.slice(0, c).trim().toLowerCase();
    const value = line.slice(c + 1).trim();
    if (name === 'www-authenticate') challenges.push(value);
    headers[name] = headers[name] === undefined ? value : `${headers[name]}, ${value}`;
  }
  const cl = headers['content-length'];
  let bodyLength = 0;
  if (cl !== undefined) {
    if (!/^\d{1,10}$/.test(cl)) throw new RtspProtocolError(`bad Content-Length ${cl}`);
    bodyLength = Number(cl);
    if (bodyLength > MAX_BODY_BYTES) {
      throw new RtspProtocolError(`body of ${bodyLength} bytes over ${MAX_BODY_BYTES}`);
    }
  }
  const st = /^RTSP\/1\.\d (\d{3})(?: (.*))?$/.exec(first);
  if (st) {
    return {
      msg: {
        kind: 'response',
        status: Number(st[1]),
        reason: st[2] ?? '',
        headers,
        challenges,
        body: Buffer.alloc(0),
      },
      bodyLength,
    };
  }
  const rq = /^([A-Z_]+) (\S+) RTSP\/1\.\d$/.exec(first);
  if (rq) {
    return {
      msg: { kind: 'request', method: rq[1]!, uri: rq[2]!, headers, body: Buffer.alloc(0) },
      bodyLength,
    };
  }
  throw new RtspProtocolError(`not an RTSP message: ${JSON.stringify(first.slice(0, 80))}`);
}

/** `Session: 12345678;timeout=60` → id and time-out in seconds (RFC 2326 12.37; default 60). */
export function parseSession(v: string): { id: string; timeoutS: number } {
  const [id, ...params] = v.split(';').map((s) => s.trim());
  let timeoutS = 60;
  for (const p of params) {
    const m = /^timeout\s*=\s*(\d+)$/i.exec(p);
    if (m) timeoutS = Math.max(1, Number(m[1]));
  }
  return { id: id ?? '', timeoutS };
}

export interface TransportReply {
  /** Interleaved channels (TCP). */
  interleaved?: [number, number];
  /** The server's RTP/RTCP ports (UDP). */
  serverPorts?: [number, number];
  source?: string;
  ssrc?: number;
}

/** The Transport header of a SETUP reply (RFC 2326 12.39), the fields a client needs. */
export function parseTransport(v: string): TransportReply {
  const out: TransportReply = {};
  const pair = (s: string): [number, number] | undefined => {
    const m = /^(\d+)(?:-(\d+))?$/.exec(s);
    if (!m) return undefined;
    const a = Number(m[1]);
    return [a, m[2] !== undefined ? Number(m[2]) : a + 1];
  };
  // Several transports may be listed; the first is the one chosen.
  const first = v.split(',')[0] ?? '';
  for (const part of first.split(';')) {
    const [k, val] = part.split('=', 2).map((s) => s.trim()) as [string, string | undefined];
    if (val === undefined) continue;
    switch (k.toLowerCase()) {
      case 'interleaved': {
        const p = pair(val);
        if (p) out.interleaved = p;
        break;
      }
      case 'server_port': {
        const p = pair(val);
        if (p) out.serverPorts = p;
        break;
      }
      case 'source':
        out.source = val;
        break;
      case 'ssrc':
        if (/^[0-9a-fA-F]{1,8}$/.test(val)) out.ssrc = Number.parseInt(val, 16);
        break;
    }
  }
  return out;
}

/** `RTP-Info: url=...;seq=1;rtptime=2, url=...` → per url. */
export function parseRtpInfo(v: string): { url: string; seq?: number; rtptime?: number }[] {
  const out: { url: string; seq?: number; rtptime?: number }[] = [];
  for (const item of v.split(/,(?=\s*url=)/)) {
    const e: { url: string; seq?: number; rtptime?: number } = { url: '' };
    for (const part of item.split(';')) {
      const i = part.indexOf('=');
      if (i < 0) continue;
      const k = part.slice(0, i).trim().toLowerCase();
      const val = part.slice(i + 1).trim();
      if (k === 'url') e.url = val;
      else if (k === 'seq' && /^\d+$/.test(val)) e.seq = Number(val);
      else if (k === 'rtptime' && /^\d+$/.test(val)) e.rtptime = Number(val);
    }
    if (e.url) out.push(e);
  }
  return out;
}
