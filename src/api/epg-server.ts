// The EPG server's HTTP (default 10444 HTTP, 10445 HTTPS): GET /xmltv and /xmltv.gz per spec 2,
// with Digest or l/p authentication against the EPG login list and per-account channel sets.
// The bodies come from the cache in src/epg/xmltv-cache.ts.
import { timingSafeEqual } from 'node:crypto';
import { readFileSync } from 'node:fs';
import type { Server as HttpsServer } from 'node:https';
import type { Socket } from 'node:net';
import { Readable } from 'node:stream';
import Fastify, { type FastifyInstance, type FastifyReply, type FastifyRequest } from 'fastify';
import { type CertificateInfo, certificateInfo, TlsFiles } from '../drivers/tls-files.ts';
import type { EpgLogin, EpgRuntime } from '../epg/runtime.ts';
import {
  type Access,
  type EpgHttpServer,
  type EpgServerSettings,
  type ListenerPorts,
  type Restarted,
  XmltvCache,
} from '../epg/xmltv-cache.ts';
import { ERRORS, type ErrorCode } from '../errors.ts';
import { moveListener } from '../util/listener-move.ts';
import { localRequest } from '../util/loopback.ts';
import { DigestAuthenticator } from './auth/digest.ts';

export const EPG_REALM = 'sluice-epg';
export const NONCE_LIFETIME_SEC = 300;
// Spec 2: requests from 127.0.0.1 are anonymous (the socket peer; a request a proxy forwarded, or
// one sluice sent itself, is not: src/util/loopback.ts).
const PATH_PLAIN = '/xmltv';
const PATH_GZ = '/xmltv.gz';
/** How long a closing listener waits for its open connections before destroying them. */
export const CLOSE_GRACE_MS = 1000;

function sendError(reply: FastifyReply, code: ErrorCode, message?: string): FastifyReply {
  const { status, message: dflt } = ERRORS[code];
  return reply
    .code(status)
    .type('application/json')
    .send(JSON.stringify({ status, message: message ?? dflt }));
}

function acceptsGzip(header: string | undefined): boolean {
  if (!header) return false;
  return header.split(',').some((part) => {
    const [coding, ...params] = part.trim().split(';');
    if (coding?.trim().toLowerCase() !== 'gzip' && coding?.trim() !== '*') return false;
    const q = params.map((p) => p.trim()).find((p) => p.startsWith('q='));
    return !q || Number(q.slice(2)) > 0;
  });
}

export interface EpgAppOptions {
  rt: EpgRuntime;
  cache: XmltvCache;
  digest: DigestAuthenticator;
  https?: { cert: Buffer; key: Buffer };
}

/** Build one listener's Fastify app (HTTP or HTTPS); the caller listens. */
export function buildEpgServerApp(o: EpgAppOptions): FastifyInstance {
  const app = (
    o.https
      ? Fastify({ https: o.https, exposeHeadRoutes: false })
      : Fastify({ exposeHeadRoutes: false })
  ) as FastifyInstance;
  trackSockets(app);
  app.removeAllContentTypeParsers();
  app.addContentTypeParser('*', (_req, payload, done) => {
    payload.resume();
    done(null, undefined);
  });
  app.addHook('onSend', async (_req, reply) => {
    reply.header('cache-control', 'no-cache, no-store, must-revalidate');
    reply.header('pragma', 'no-cache');
    reply.header('expires', '0');
    reply.header('connection', 'close');
  });
  app.setErrorHandler((err, _req, reply) => {
    o.rt.log.warn({ err }, 'EPG server request failed');
    return sendError(reply, 'INTERNAL');
  });

  const handle = async (req: FastifyRequest, reply: FastifyReply) => {
    const path = req.url.split('?')[0];
    if (path !== PATH_PLAIN && path !== PATH_GZ) return sendError(reply, 'NOT_FOUND');
    if (req.method !== 'GET') {
      reply.header('allow', 'GET');
      return sendError(reply, 'METHOD_NOT_ALLOWED');
    }
    const access = authenticate(o, req, reply);
    if (!access) return reply;
    const bodies = await o.cache.get(access);
    if (path === PATH_GZ) {
      return reply
        .type('application/octet-stream')
        .header('content-disposition', 'inline; filename=xmltv.xml.gz')
        .send(bodies.gzip);
    }
    reply.type('text/xml; charset=utf-8').header('vary', 'Accept-Encoding');
    if (acceptsGzip(req.headers['accept-encoding'])) {
      return reply.header('content-encoding', 'gzip').send(bodies.gzip);
    }
    // The plain body is a list of chunks: stream them, with the length known up front.
    return reply
      .header('content-length', String(bodies.plainLength))
      .send(Readable.from(bodies.plainChunks, { objectMode: false }));
  };
  app.setNotFoundHandler(handle);
  app.get(PATH_PLAIN, handle);
  app.get(PATH_GZ, handle);
  return app;
}

/** Decide what the request may see, or answer 401/403 and return undefined. */
function authenticate(
  o: EpgAppOptions,
  req: FastifyRequest,
  reply: FastifyReply,
): Access | undefined {
  const q = req.query as Record<string, string | undefined>;
  const ip = req.socket.remoteAddress ?? '';
  const auth = req.headers.authorization;
  const qLogin = q['l'] ?? q['login'];
  const qPassword = q['p'] ?? q['password'];
  let login: EpgLogin | undefined;
  const challenge = (stale = false) => {
    reply.header('www-authenticate', o.digest.challenges(stale));
    sendError(reply, 'UNAUTHORIZED');
    return undefined;
  };
  if (auth && /^\s*Digest\s/i.test(auth)) {
    const r = o.digest.verify(req.method, req.url, auth);
    if (!r.ok) return challenge(r.stale);
    login = findLogin(o.rt, r.login);
  } else if (qLogin !== undefined) {
    const l = findLogin(o.rt, qLogin);
    if (!l || qPassword === undefined || !sameSecret(l.password, qPassword)) return challenge();
    login = l;
  } else if (localRequest(req.socket, req.headers)) {
    return { kind: 'all' };
  } else return challenge();
  if (!login) return challenge();
  const clientIp = ip.startsWith('::ffff:') ? ip.slice(7) : ip;
  if (login.pause) return forbid(reply, 'account paused');
  if (login.limitDay > 0 && o.rt.nowSec() > login.limitDay) return forbid(reply, 'account expired');
  if (login.limitIp && login.limitIp !== clientIp && login.limitIp !== ip) {
    return forbid(reply, 'address not permitted for this account');
  }
  return login.channelSet > 0 ? { kind: 'set', set: login.channelSet } : { kind: 'none' };
}

function forbid(reply: FastifyReply, message: string): undefined {
  sendError(reply, 'FORBIDDEN', message);
  return undefined;
}

function findLogin(rt: EpgRuntime, name: string): EpgLogin | undefined {
  for (const l of rt.logins.values()) if (l.login === name) return l;
  return undefined;
}

function sameSecret(a: string, b: string): boolean {
  const x = Buffer.from(a);
  const y = Buffer.from(b);
  return x.length === y.length && timingSafeEqual(x, y);
}

/** Settings that require restarting one listener when they change. */
export const HTTP_FIELDS = ['port', 'bindAddress'] as const;
export const HTTPS_FIELDS = ['httpsPort', 'bindAddress', 'certificate', 'privateKey'] as const;

/** One bound listener and the settings it was started with. */
interface Listener {
  app: FastifyInstance;
  on: EpgServerSettings;
  /** HTTPS from certificate files: reloaded when they change. */
  tls?: TlsFiles;
}

type Which = 'http' | 'https';

/** The running EPG server: its HTTP and (with a certificate) HTTPS listeners, the Digest
 *  verifier and the body cache. The two listeners restart independently. */
export class EpgServer implements EpgHttpServer {
  readonly cache: XmltvCache;
  readonly digest: DigestAuthenticator;
  private http: Listener | undefined;
  private https: Listener | undefined;
  private resetListener = () => this.cache.clear();

  constructor(
    private rt: EpgRuntime,
    public settings: EpgServerSettings,
  ) {
    this.cache = new XmltvCache(rt, () => ({
      sourceInfoName: this.settings.sourceInfoName,
      sourceInfoUrl: this.settings.sourceInfoUrl,
    }));
    this.digest = new DigestAuthenticator({
      realm: EPG_REALM,
      clock: rt.clock,
      lifetimeSec: NONCE_LIFETIME_SEC,
      password: (name) => findLogin(rt, name)?.password,
    });
    rt.resetListeners.add(this.resetListener);
  }

  /** Listen on the HTTP port and, with a certificate and key, the HTTPS port. Returns the
   *  bound ports (useful with port 0 in tests). */
  async listen(): Promise<ListenerPorts> {
    this.http = await this.open('http', this.settings);
    this.https = await this.open('https', this.settings);
    return this.ports();
  }

  ports(): ListenerPorts {
    const out: ListenerPorts = { http: this.http ? portOf(this.http.app) : 0 };
    if (this.https) out.https = portOf(this.https.app);
    return out;
  }

  /** Take new settings: restart only the listener whose socket or TLS settings changed
   *  (a new certificate path restarts HTTPS alone; the HTTP clients are not disturbed). A
   *  listener that cannot move keeps serving where it was, and the error is thrown. */
  async apply(next: EpgServerSettings): Promise<Restarted> {
    this.settings = next;
    // Compared with what each listener runs on: one that failed to start or move before is
    // tried again even when nothing changed since.
    const differs = (l: Listener | undefined, keys: readonly (keyof EpgServerSettings)[]) =>
      !l || keys.some((k) => l.on[k] !== next[k]);
    const wantsHttps = !!(next.certificate && next.privateKey);
    const restarted: Restarted = {
      http: differs(this.http, HTTP_FIELDS),
      https: wantsHttps ? differs(this.https, HTTPS_FIELDS) : !!this.https,
    };
    let failed: unknown;
    for (const which of ['http', 'https'] as const) {
      if (!restarted[which]) continue;
      try {
        await this.move(which, next);
      } catch (err) {
        failed ??= err;
      }
    }
    if (failed) throw failed;
    return restarted;
  }

  /** Move one listener to `next` (src/util/listener-move.ts: the old serves until the new is
   *  bound). */
  private move(which: Which, next: EpgServerSettings): Promise<void> {
    const old = this[which];
    const portKey = which === 'http' ? 'port' : 'httpsPort';
    return moveListener({
      old,
      samePort: !!old && next[portKey] !== 0 && old.on[portKey] === next[portKey],
      open: () => this.open(which, next),
      reopen: () => this.open(which, old!.on),
      shut: (l) => this.shut(l),
      hold: (l) => {
        this[which] = l;
      },
    });
  }

  /** Bind one listener with `s` (undefined: HTTPS without a certificate and key). */
  private async open(which: Which, s: EpgServerSettings): Promise<Listener | undefined> {
    if (which === 'http') {
      const app = buildEpgServerApp({ rt: this.rt, cache: this.cache, digest: this.digest });
      await app.listen({ port: s.port, host: s.bindAddress }).catch(async (err) => {
        await app.close();
        throw err;
      });
      return { app, on: s };
    }
    if (!s.certificate || !s.privateKey) return undefined;
    const cert = pem(s.certificate);
    const app = buildEpgServerApp({
      rt: this.rt,
      cache: this.cache,
      digest: this.digest,
      https: { cert, key: pem(s.privateKey) },
    });
    await app.listen({ port: s.httpsPort, host: s.bindAddress }).catch(async (err) => {
      await app.close();
      throw err;
    });
    // Files (not inline PEM) are reloaded when they change, as the admin server's are.
    const tls =
      isPath(s.certificate) && isPath(s.privateKey)
        ? new TlsFiles(s.certificate, s.privateKey, app.server as HttpsServer, this.rt.log, cert)
        : undefined;
    return { app, on: s, ...(tls ? { tls } : {}) };
  }

  /** The certificate HTTPS serves now (absent without HTTPS). */
  certificate(): CertificateInfo | undefined {
    const l = this.https;
    if (!l) return undefined;
    return l.tls?.info() ?? certificateInfo(pem(l.on.certificate));
  }

  private async shut(l: Listener): Promise<void> {
    l.tls?.close();
    await closeApp(l.app);
  }

  async close(): Promise<void> {
    this.rt.resetListeners.delete(this.resetListener);
    const open = [this.http, this.https].filter((l): l is Listener => !!l);
    this.http = undefined;
    this.https = undefined;
    await Promise.all(open.map((l) => this.shut(l)));
  }
}

/** Close a listener: new connections are refused at once; connections still open after
 *  CLOSE_GRACE_MS are destroyed. Without that a client that opened a TLS connection and never
 *  finished the handshake (Node does not count it as an idle HTTP connection) would hold the
 *  close, and with it a certificate change, forever. */
async function closeApp(app: FastifyInstance): Promise<void> {
  const sockets = new Set<Socket>();
  for (const s of trackedSockets.get(app) ?? []) sockets.add(s);
  const closing = app.close();
  // I/O draining, not EPG logic: a real timer (the Clock may be a manual one in tests).
  const timer = setTimeout(() => {
    for (const s of sockets) s.destroy();
  }, CLOSE_GRACE_MS);
  try {
    await closing;
  } finally {
    clearTimeout(timer);
  }
}

/** Raw sockets of each listener, so closeApp can destroy the stragglers. */
const trackedSockets = new WeakMap<FastifyInstance, Set<Socket>>();

function trackSockets(app: FastifyInstance): void {
  const set = new Set<Socket>();
  trackedSockets.set(app, set);
  app.server.on('connection', (s: Socket) => {
    set.add(s);
    s.once('close', () => set.delete(s));
  });
}

function portOf(app: FastifyInstance): number {
  const addr = app.server.address();
  return typeof addr === 'object' && addr ? addr.port : 0;
}

function isPath(v: string): boolean {
  return !v.includes('-----BEGIN');
}

/** A PEM value: inline text or a file path. */
function pem(v: string): Buffer {
  return isPath(v) ? readFileSync(v) : Buffer.from(v);
}

/** The factory main.ts hands to the EPG server driver (EPG_HTTP_SERVICE). */
export function createEpgHttpServer(rt: EpgRuntime, settings: EpgServerSettings): EpgServer {
  return new EpgServer(rt, settings);
}
