// The RTSP control connection of the `rtsp` input: one TCP socket, requests answered in order
// (one outstanding at a time), a 401 answered once with Basic or Digest (src/protocols/
// http-auth.ts; RTSP uses the same schemes), `User-Agent`, `Cookie` and `Session` on every
// request, interleaved frames handed to the owner, requests from the server answered.
import { connect, type Socket } from 'node:net';
import type { Logger } from 'pino';
import { basicAuthorization, DigestClient, parseChallenges } from '../../protocols/http-auth.ts';
import { RtspReader, type RtspResponse, writeRequest } from '../../protocols/rtsp/message.ts';
import type { Clock } from '../../util/clock.ts';

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
  trace: boolean;
  log: Logger;
  clock: Clock;
  onInterleaved(channel: number, data: Buffer): void;
  onClose(err: Error): void;
}

export class RtspConnection {
  private socket: Socket | null = null;
  private cseq = 0;
  private waiting: {
    cseq: number;
    resolve: (r: RtspResponse) => void;
    reject: (e: Error) => void;
  } | null = null;
  private queue: Promise<unknown> = Promise.resolve();
  private authorize: ((method: string, uri: string) => string) | null = null;
  session = '';
  private closed = false;

  constructor(private readonly o: ConnectionOptions) {}

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
          s.write(`RTSP/1.0 ${ok ? '200 OK' : '501 Not Implemented'}\r\nCSeq: ${cseq}\r\n\r\n`);
        }
      });
      s.once('connect', () => {
        timer.cancel();
        resolve();
      });
      s.on('data', (d: Buffer) => {
        try {
          reader.push(d);
        } catch (err) {
          this.fail(err as Error);
        }
      });
      s.on('error', (err) => {
        timer.cancel();
        reject(new RtspError(`${this.o.host}:${this.o.port}: ${err.message}`));
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
    this.waiting?.reject(err);
    this.waiting = null;
    this.o.onClose(err);
  }

  /** Close the socket; whatever waits on it (open, a request, the owner's onClose) ends. */
  close(): void {
    this.fail(new RtspError('closed'));
  }

  /** Bytes written as they are (RTCP over interleaved channels). */
  write(b: Buffer): void {
    if (!this.closed) this.socket?.write(b);
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
      this.socket!.write(req);
    });
  }
}
