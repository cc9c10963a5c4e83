// The HTTP client of the pull inputs: GET with keep-alive, bounded redirects, the configured
// User-Agent and Cookie, Basic or Digest answered to a 401 challenge (the Digest session kept
// per origin, so later requests authenticate at once), an idle time-out and a hard deadline per
// request (deadline.ts), a body size cap and the input's body memory (body-buffers.ts), and a
// streaming mode (progressive HTTP-TS). Errors are HttpError with a message in words.
import http from 'node:http';
import https from 'node:https';
import { basicAuthorization, DigestClient, parseChallenges } from '../../protocols/http-auth.ts';
import { type Clock, systemClock } from '../../util/clock.ts';
import { unreachable } from '../common.ts';
import { type BodyBuffers, type BodyRefusal, IncomingBody, refusalWords } from './body-buffers.ts';
import { Deadline } from './deadline.ts';
import { Http1Failure, Http1Pool } from './http1-pool.ts';

export const MAX_REDIRECTS = 5;
export const DEFAULT_USER_AGENT = 'sluice';
/** Response headers bigger than this are refused by Node's parser. */
const MAX_HEADER_BYTES = 64 * 1024;

export class HttpError extends Error {
  constructor(
    message: string,
    /** HTTP status, 0 for a network error or time-out. */
    readonly status: number,
    /** The body was refused: over its cap, or no room in the input's body memory. */
    readonly refusal: BodyRefusal | null = null,
  ) {
    super(message);
  }

  /** The body exceeded its cap. */
  get tooBig(): boolean {
    return this.refusal?.kind === 'cap';
  }
}

export interface HttpClientOptions {
  userAgent: string;
  cookies: string;
  login: string;
  password: string;
  /** Idle time-out, and the hard deadline of a request unless it sets its own. */
  timeoutMs: number;
  /** Sockets kept per origin. */
  maxSockets: number;
  /** The deadlines' timers (default: the system clock). */
  clock?: Clock;
}

export interface GetOptions {
  maxBytes: number;
  range?: { offset: number; length: number };
  /** Streaming: every chunk of the body goes here and the result's body stays empty. */
  onChunk?: (chunk: Buffer) => void;
  signal?: AbortSignal;
  /** The request's hard deadline in ms, redirects and authentication included (default:
   *  `timeoutMs`). A streaming request is bound by it until its body begins. */
  deadlineMs?: number;
  /** The caller's own deadline instead (kept over a streaming body until the caller cancels). */
  deadline?: Deadline;
  /** The body is put in this memory (hand it back with `give` once done). */
  bodies?: BodyBuffers;
}

export interface GetResult {
  status: number;
  /** The URL after redirects. */
  url: string;
  contentType: string;
  body: Buffer;
}

/** What a status means for an operator. */
export function statusWords(status: number, url: string): string {
  const what = `${status} from origin`;
  if (status === 401) return `${what}: login or password refused`;
  if (status === 403) return `${what}: access forbidden`;
  if (status === 404) return `${what}: no such stream (${url})`;
  if (status === 410) return `${what}: gone (${url})`;
  if (status >= 500) return `${what}: server error`;
  return `${what} (${url})`;
}

/** One request's answer, before redirects and authentication are followed. */
interface OnceResult {
  status: number;
  location?: string;
  challenge: string;
  contentType: string;
  body: Buffer;
}

export class HttpClient {
  private readonly agents: { http: http.Agent; https: https.Agent };
  /** Plain http:// GETs (all but progressive streams): src/inputs/hls/http1-pool.ts. */
  private readonly plain: Http1Pool;
  private readonly digest = new Map<string, DigestClient>();
  private readonly basic = new Set<string>();

  constructor(private readonly o: HttpClientOptions) {
    const a = { keepAlive: true, maxSockets: o.maxSockets, maxFreeSockets: o.maxSockets };
    this.agents = { http: new http.Agent(a), https: new https.Agent(a) };
    this.plain = new Http1Pool(o.maxSockets);
  }

  close(): void {
    this.plain.close();
    this.agents.http.destroy();
    this.agents.https.destroy();
  }

  async get(url: string, opts: GetOptions): Promise<GetResult> {
    // A streaming body is paced by the origin: its own deadline ends where the body begins.
    const headOnly = opts.onChunk !== undefined && !opts.deadline;
    const own = opts.deadline
      ? null
      : new Deadline(this.o.clock ?? systemClock, opts.deadlineMs ?? this.o.timeoutMs);
    const deadline = (opts.deadline ?? own)!;
    try {
      let target = url;
      let authTried = false;
      let challenges = 0;
      for (let hop = 0; hop <= MAX_REDIRECTS; hop++) {
        const r = await this.once(target, opts, deadline, headOnly);
        if (r.status >= 300 && r.status < 400 && r.location !== undefined) {
          target = new URL(r.location, target).href;
          continue;
        }
        // A challenge is answered at most twice a request (once more for a stale nonce).
        if (r.status === 401 && challenges < 2 && this.o.login) {
          const stale = authTried && /stale\s*=\s*"?true/i.test(r.challenge);
          if ((!authTried || stale) && this.learn(target, r.challenge)) {
            authTried = true;
            challenges++;
            hop--;
            continue;
          }
        }
        if (r.status !== 200 && r.status !== 206)
          throw new HttpError(statusWords(r.status, target), r.status);
        return { status: r.status, url: target, contentType: r.contentType, body: r.body };
      }
      throw new HttpError(`more than ${MAX_REDIRECTS} redirects (${url})`, 0);
    } finally {
      own?.cancel();
    }
  }

  /** Take the server's challenge; false when it offers nothing this client can answer. */
  private learn(url: string, header: string): boolean {
    const origin = new URL(url).origin;
    const ch = parseChallenges(header);
    const d = ch.find((c) => c.scheme === 'digest');
    if (d) {
      try {
        this.digest.set(origin, new DigestClient(d.params, this.o.login, this.o.password));
        return true;
      } catch {
        // an algorithm not supported: try Basic when offered
      }
    }
    if (ch.some((c) => c.scheme === 'basic')) {
      this.basic.add(origin);
      return true;
    }
    return false;
  }

  private once(
    url: string,
    opts: GetOptions,
    deadline: Deadline,
    headOnly: boolean,
  ): Promise<OnceResult> {
    return new Promise((resolveOnce, rejectOnce) => {
      const resolve = (r: OnceResult) => {
        deadline.unwatch();
        resolveOnce(r);
      };
      const reject = (e: unknown) => {
        deadline.unwatch();
        rejectOnce(e);
      };
      let u: URL;
      try {
        u = new URL(url);
      } catch {
        return reject(new HttpError(`bad URL ${url}`, 0));
      }
      const secure = u.protocol === 'https:';
      if (!secure && u.protocol !== 'http:') {
        return reject(new HttpError(`not an http(s) URL: ${url}`, 0));
      }
      // The request target as given (the URL may hold raw characters: disable-url-encode).
      const path = rawPath(url);
      const headers: Record<string, string> = {
        'User-Agent': this.o.userAgent || DEFAULT_USER_AGENT,
        Accept: '*/*',
      };
      if (this.o.cookies) headers['Cookie'] = this.o.cookies;
      if (opts.range) {
        headers['Range'] =
          `bytes=${opts.range.offset}-${opts.range.offset + opts.range.length - 1}`;
      }
      const d = this.digest.get(u.origin);
      if (d) headers['Authorization'] = d.authorization('GET', path);
      else if (this.basic.has(u.origin)) {
        headers['Authorization'] = basicAuthorization(this.o.login, this.o.password);
      }
      if (!secure && !opts.onChunk) {
        return this.plainGet(u, path, headers, opts, deadline).then(resolve, reject);
      }
      const req = (secure ? https : http).request({
        protocol: u.protocol,
        hostname: u.hostname.replace(/^\[|\]$/g, ''),
        port: u.port || (secure ? 443 : 80),
        path,
        method: 'GET',
        headers,
        agent: secure ? this.agents.https : this.agents.http,
        maxHeaderSize: MAX_HEADER_BYTES,
        ...(opts.signal ? { signal: opts.signal } : {}),
      });
      const timeout = this.o.timeoutMs;
      req.setTimeout(timeout, () => {
        req.destroy(new HttpError(`no answer from origin in ${timeout / 1000} s`, 0));
      });
      let answered = false;
      deadline.watch(() => {
        const e = new HttpError(`${deadline.words(answered)} (${url})`, 0);
        reject(e);
        req.destroy(e);
      });
      req.on('error', (err) => {
        if (err instanceof HttpError) return reject(err);
        const code = (err as NodeJS.ErrnoException).code;
        if (code === 'ECONNREFUSED') return reject(new HttpError(unreachable(err, url)!, 0));
        if (code === 'ENOTFOUND')
          return reject(new HttpError(`origin host not found (${u.hostname})`, 0));
        if (err.name === 'AbortError') return reject(new HttpError('aborted', 0));
        reject(new HttpError(`origin: ${err.message}`, 0));
      });
      req.on('response', (res) => {
        answered = true;
        const status = res.statusCode ?? 0;
        const base = {
          status,
          challenge: String(res.headers['www-authenticate'] ?? ''),
          contentType: String(res.headers['content-type'] ?? ''),
          ...(res.headers.location !== undefined ? { location: res.headers.location } : {}),
        };
        if (status !== 200 && status !== 206) {
          res.resume(); // drain, so the socket goes back to the pool
          res.on('end', () => resolve({ ...base, body: Buffer.alloc(0) }));
          res.on('error', () => resolve({ ...base, body: Buffer.alloc(0) }));
          return;
        }
        if (opts.onChunk) {
          if (headOnly) deadline.cancel(); // the body: the idle time-out only
          res.on('data', opts.onChunk);
          res.on('end', () => {
            if (!res.complete)
              return reject(new HttpError('origin closed the connection early', 0));
            resolve({ ...base, body: Buffer.alloc(0) });
          });
          res.on('error', (err) => reject(new HttpError(`origin: ${err.message}`, 0)));
          return;
        }
        const body = new IncomingBody(opts.bodies, opts.maxBytes);
        let refused = false;
        const refuse = (r: BodyRefusal | null): boolean => {
          if (!r) return false;
          refused = true;
          reject(refusalError(r));
          req.destroy();
          return true;
        };
        if (refuse(body.begin(Number(res.headers['content-length'] ?? -1)))) return;
        res.on('data', (c: Buffer) => {
          if (!refused) refuse(body.append(c));
        });
        res.on('end', () => {
          if (res.complete) return resolve({ ...base, body: body.result() });
          body.release();
          reject(new HttpError('origin closed the connection early', 0));
        });
        res.on('error', (err) => {
          body.release();
          reject(new HttpError(`origin: ${err.message}`, 0));
        });
        // Ended by the deadline or an abort: the body's memory goes with the request.
        req.on('close', () => {
          if (!res.complete) body.release();
        });
      });
      req.end();
    });
  }

  /** A plain http:// GET through the pool of our own connections (no streaming). */
  private async plainGet(
    u: URL,
    path: string,
    headers: Record<string, string>,
    opts: GetOptions,
    deadline: Deadline,
  ): Promise<OnceResult> {
    try {
      const a = await this.plain.request({
        host: u.hostname.replace(/^\[|\]$/g, ''),
        port: Number(u.port || 80),
        authority: u.host,
        target: path,
        headers: Object.entries(headers),
        timeoutMs: this.o.timeoutMs,
        maxBytes: opts.maxBytes,
        deadline,
        ...(opts.signal ? { signal: opts.signal } : {}),
        ...(opts.bodies ? { bodies: opts.bodies } : {}),
      });
      const location = a.headers.get('location');
      return {
        status: a.status,
        challenge: a.headers.get('www-authenticate') ?? '',
        contentType: a.headers.get('content-type') ?? '',
        ...(location !== undefined ? { location } : {}),
        body: a.body,
      };
    } catch (err) {
      if (!(err instanceof Http1Failure)) throw err;
      if (err.refusal) throw refusalError(err.refusal);
      if (err.code === 'ECONNREFUSED') throw new HttpError(unreachable(err, u.href)!, 0);
      if (err.code === 'ENOTFOUND' || err.code === 'EAI_AGAIN') {
        throw new HttpError(`origin host not found (${u.hostname})`, 0);
      }
      if (err.code === 'DEADLINE') throw new HttpError(`${err.message} (${u.href})`, 0);
      if (['TIMEOUT', 'ABORTED', 'EARLY_CLOSE'].includes(err.code)) {
        throw new HttpError(err.message, 0);
      }
      throw new HttpError(`origin: ${err.message}`, 0);
    }
  }
}

function refusalError(r: BodyRefusal): HttpError {
  return new HttpError(refusalWords(r), 0, r);
}

/** Path and query of an absolute URL, exactly as written. */
function rawPath(url: string): string {
  const m = /^[a-z][a-z0-9+.-]*:\/\/[^/?#]*([^#]*)/i.exec(url);
  const p = m?.[1] ?? '/';
  return p.startsWith('/') ? p : `/${p}`;
}
