// The RTSP control connection of the `rtsp` input: one TCP socket, requests answered in order
// (one outstanding at a time), a 401 answered once with Basic or Digest (src/protocols/
// http-auth.ts; RTSP uses the same schemes), `User-Agent`, `Cookie` and `Session` on every
// request, interleaved frames handed to the owner, requests from the server answered. With
// `tunnel`, RTSP runs over HTTP (the QuickTime tunnelling scheme): a GET connection carries the
// server's side (after an HTTP 200 header), a POST connection with the same x-sessioncookie
// carries ours, base64-encoded.
import { randomBytes } from 'node:crypto';
import { connect, type Socket } from 'node:net';
import type { Logger } from 'pino';
import { basicAuthorization, DigestClient, parseChallenges } from '../../protocols/http-auth.ts';
import {
  MAX_HEADER_BYTES,
  RtspReader,
  type RtspResponse,
  writeRequest,
} from '../../protocols/rtsp/message.ts';
import type { Clock } from '../../util/clock.ts';
import { unreachable } from '../common.ts';

export class RtspError extends Error {
  constructor(
    message: string,
    readonly status = 0,
  ) {
    super(message);
  }
}

export interface ConnectionOptions {
  host: string;
  port: number;
  login: string;
  password: string;
  userAgent: string;
  cookies: string;
  timeoutMs: number;
  /** RTSP over HTTP: the path (and query) of the tunnel's GET and POST; undefined = plain. */
  tunnel?: string;
  trace: boolean;
  log: Logger;
  clock: Clock;
  onInterleaved(channel: number, data: Buffer): void;
  onClose(err: Error): void;
}

export class RtspConnection {
  private socket: Socket | null = null;
  /** The POST connection of an HTTP tunnel: what we send goes there, base64-encoded. */
  private post: Socket | null = null;
  private cseq = 0;
  private waiting: {
    cseq: number;
    resolve: (r: RtspResponse) => void;
    reject: (e: Error) => void;
  } | null = null;
  private queue: Promise<unknown> = Promise.resolve();
  private authorize: ((method: string, uri: string) => string) | null = null;
  private reader: RtspReader | null = null;
  session = '';
  private closed = false;

  constructor(private readonly o: ConnectionOptions) {}

  /** Bytes read and held for the rest of a message (header block, body, interleaved frame). */
  get buffered(): number {
    return this.reader?.buffered ?? 0;
  }

  get localAddress(): string {
    return this.socket?.localAddress ?? '';
  }

  get remoteAddress(): string {
    return this.socket?.remoteAddress ?? '';
  }

  open(): Promise<void> {
    return new Promise((resolve, reject) => {
      const s = connect({ host: this.o.host, port: this.o.port });
      this.socket = s;
      s.setNoDelay(true);
      const timer = this.o.clock.setTimeout(() => {
        s.destroy();
        reject(
          new RtspError(
            `no connection to ${this.o.host}:${this.o.port} within ${this.o.timeoutMs / 1000} s`,
          ),
        );
      }, this.o.timeoutMs);
      const reader = new RtspReader((m) => {
        if (m.kind === 'interleaved') this.o.onInterleaved(m.channel, m.data);
        else if (m.kind === 'response') this.response(m);
        else {
          // A request from the server (keep-alive OPTIONS, ANNOUNCE …): answered, not acted on.
          const ok = m.method === 'OPTIONS' || m.method === 'GET_PARAMETER';
          const cseq = m.headers['cseq'] ?? '0';
          this.write(
            Buffer.from(
              `RTSP/1.0 ${ok ? '200 OK' : '501 Not Implemented'}\r\nCSeq: ${cseq}\r\n\r\n`,
            ),
          );
        }
      });
      this.reader = reader;
      const tunnel = this.o.tunnel;
      const cookie = randomBytes(12).toString('hex');
      const http = (method: string, extra: string) =>
        `${method} ${tunnel} HTTP/1.0\r\nx-sessioncookie: ${cookie}\r\n` +
        (this.o.userAgent ? `User-Agent: ${this.o.userAgent.replace(/[\r\n]/g, '')}\r\n` : '') +
        `Pragma: no-cache\r\nCache-Control: no-cache\r\n${extra}\r\n`;
      // Through a tunnel the GET answer's HTTP header comes first (bounded like RTSP's).
      let httpHead: Buffer | null = tunnel === undefined ? null : Buffer.alloc(0);
      s.once('connect', () => {
        if (tunnel === undefined) {
          timer.cancel();
          resolve();
          return;
        }
        s.write(http('GET', 'Accept: application/x-rtsp-tunnelled\r\n'));
        const p = connect({ host: this.o.host, port: this.o.port });
        this.post = p;
        p.setNoDelay(true);
        p.once('connect', () => {
          p.write(
            http(
              'POST',
              'Content-Type: application/x-rtsp-tunnelled\r\nContent-Length: 32767\r\n' +
                'Expires: Sun, 9 Jan 1972 00:00:00 GMT\r\n',
            ),
          );
        });
        p.on('data', () => {}); // a server may answer the POST when it ends; nothing to read
        p.on('error', (err) => this.fail(new RtspError(`HTTP tunnel POST: ${err.message}`)));
        p.on('close', () => this.fail(new RtspError('the server closed the HTTP tunnel')));
      });
      s.on('data', (d: Buffer) => {
        try {
          if (httpHead) {
            const b = Buffer.concat([httpHead, d]);
            const end = b.indexOf('\r\n\r\n');
            if (end < 0) {
              if (b.length > MAX_HEADER_BYTES)
                throw new RtspError('HTTP tunnel: header over 64 KiB');
              httpHead = b;
              return;
            }
            const status = /^HTTP\/1\.\d (\d{3})/.exec(b.toString('latin1', 0, Math.min(end, 64)));
            if (status?.[1] !== '200') {
              const code = status?.[1] ?? 'no HTTP status';
              throw new RtspError(
                code === '404'
                  ? 'no such stream (404 from the server over HTTP)'
                  : `HTTP tunnel: GET answered ${code}`,
                Number(status?.[1] ?? 0),
              );
            }
            httpHead = null;
            timer.cancel();
            resolve();
            d = b.subarray(end + 4);
            if (d.length === 0) return;
          }
          reader.push(d);
        } catch (err) {
          reject(err);
          this.fail(err as Error);
        }
      });
      s.on('error', (err) => {
        timer.cancel();
        const at = `rtsp://${this.o.host}:${this.o.port}`;
        reject(
          new RtspError(unreachable(err, at) ?? `${this.o.host}:${this.o.port}: ${err.message}`),
        );
        this.fail(err);
      });
      s.on('close', () => {
        timer.cancel();
        reject(new RtspError('the server closed the connection'));
        this.fail(new RtspError('the server closed the connection'));
      });
    });
  }

  private fail(err: Error): void {
    if (this.closed) return;
    this.closed = true;
    this.socket?.destroy();
    this.post?.destroy();
    this.waiting?.reject(err);
    this.waiting = null;
    this.o.onClose(err);
  }

  /** Close the socket; whatever waits on it (open, a request, the owner's onClose) ends. */
  close(): void {
    this.fail(new RtspError('closed'));
  }

  /** Bytes to the server (requests, RTCP on interleaved channels); base64 through a tunnel. */
  write(b: Buffer): void {
    if (this.closed) return;
    if (this.o.tunnel !== undefined) this.post?.write(b.toString('base64'));
    else this.socket?.write(b);
  }

  private response(r: RtspResponse): void {
    if (this.o.trace) {
      this.o.log.info(
        {
          status: r.status,
          reason: r.reason,
          headers: r.headers,
          body: r.body.toString('utf8', 0, 4096),
        },
        'rtsp trace: response',
      );
    }
    const w = this.waiting;
    if (!w) return;
    const cseq = Number(r.headers['cseq'] ?? w.cseq);
    if (cseq !== w.cseq) return; // a late answer to a request given up on
    this.waiting = null;
    w.resolve(r);
  }

  /** Send a request and wait for its answer (a 401 is answered with credentials once). Throws
   *  RtspError on a non-2xx status, a time-out or a lost connection. */
  request(
    method: string,
    uri: string,
    headers: Record<string, string> = {},
  ): Promise<RtspResponse> {
    const run = async () => {
      let r = await this.send(method, uri, headers);
      if (r.status === 401 && r.challenges.length > 0) {
        if (!this.o.login)
          throw new RtspError('401 from the server: it needs rtsp-login and rtsp-password', 401);
        this.authorizeFrom(r.challenges);
        r = await this.send(method, uri, headers);
        if (r.status === 401)
          throw new RtspError('401 from the server: rtsp-login or rtsp-password refused', 401);
      }
      if (r.status === 404)
        throw new RtspError(`no such stream (404 from the server for ${uri})`, 404);
      if (r.status < 200 || r.status > 299) {
        throw new RtspError(`${method}: ${r.status} ${r.reason} from the server`.trim(), r.status);
      }
      const session = r.headers['session'];
      if (session && !this.session) this.session = session.split(';')[0]!.trim();
      return r;
    };
    const p = this.queue.then(run, run);
    this.queue = p.catch(() => {});
    return p;
  }

  private authorizeFrom(challenges: string[]): void {
    const all = challenges.flatMap((c) => parseChallenges(c));
    const digest = all.find((c) => c.scheme === 'digest');
    if (digest) {
      const d = new DigestClient(digest.params, this.o.login, this.o.password);
      this.authorize = (method, uri) => d.authorization(method, uri);
      return;
    }
    if (all.some((c) => c.scheme === 'basic')) {
      const b = basicAuthorization(this.o.login, this.o.password);
      this.authorize = () => b;
      return;
    }
    throw new RtspError('401 from the server with no Basic or Digest challenge', 401);
  }

  private send(method: string, uri: string, extra: Record<string, string>): Promise<RtspResponse> {
    if (this.closed || !this.socket) return Promise.reject(new RtspError('not connected'));
    const cseq = ++this.cseq;
    const h: Record<string, string | number> = { CSeq: cseq };
    if (this.o.userAgent) h['User-Agent'] = this.o.userAgent;
    if (this.o.cookies) h['Cookie'] = this.o.cookies;
    if (this.authorize) h['Authorization'] = this.authorize(method, uri);
    if (this.session) h['Session'] = this.session;
    Object.assign(h, extra);
    const req = writeRequest(method, uri, h);
    if (this.o.trace) this.o.log.info({ request: req.toString('utf8') }, 'rtsp trace: request');
    return new Promise((resolve, reject) => {
      const timer = this.o.clock.setTimeout(() => {
        if (this.waiting?.cseq === cseq) this.waiting = null;
        reject(new RtspError(`no answer to ${method} within ${this.o.timeoutMs / 1000} s`));
      }, this.o.timeoutMs);
      this.waiting = {
        cseq,
        resolve: (r) => {
          timer.cancel();
          resolve(r);
        },
        reject: (e) => {
          timer.cancel();
          reject(e);
        },
      };
      this.write(req);
    });
  }
}
