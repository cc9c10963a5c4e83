// The viewer gate: while billing servers are configured, every playback request presents
// viewer credentials (`?token=`, or `?login=&password=`), gets a verdict (cached, asked of the
// servers in order, or the `when-unavailable` policy) and belongs to a viewer session.
// It is the OttAccess of the OTT layer: the native engine and fast path stand aside while it
// is active. Design and knobs: docs/billing.md.
import type { IncomingHttpHeaders } from 'node:http';
import type { Logger } from 'pino';
import type { OttAccess, ViewerPasses } from '../ott/access.ts';
import type { Clock } from '../util/clock.ts';
import { type Endpoints, localRequest } from '../util/loopback.ts';
import { ServiceKey } from '../util/services.ts';
import { askServer, type BillingServer, serversFor } from './server.ts';
import {
  type CloseReason,
  type SessionEvent,
  type TrackedResponse,
  type ViewerSession,
  ViewerSessions,
} from './sessions.ts';
import type { TemplateValues } from './template.ts';

export const VIEWER_GATE_SERVICE = new ServiceKey<ViewerGate>('viewer-gate');

export interface GateSettings {
  verdictCacheMs: number;
  denialCacheMs: number;
  whenUnavailable: 'deny' | 'allow' | 'keep';
  idleMs: number;
  interimMs: number;
  kickMs: number;
  loopbackAnonymous: boolean;
}

/** What a playback request brings to the gate. */
export interface ViewerRequest {
  /** The stream or adaptive group name of the URL. */
  stream: string;
  ip: string;
  /** The request's headers: a proxied request is never anonymous. */
  headers?: IncomingHttpHeaders;
  /** The connection it came on: one sluice opened itself is never anonymous. */
  socket?: Endpoints;
  userAgent: string;
  query: Record<string, unknown>;
  res?: TrackedResponse;
}

export type Admission =
  | { ok: true; query: string; session?: ViewerSession }
  | { ok: false; status: 401 | 403; message: string };

interface Decision {
  allowed: boolean;
  reason?: string;
  server?: BillingServer;
  /** Until when (monotonic ms) it is cached; absent when it is not. */
  untilMono?: number;
}

/** Verdicts kept at most (oldest dropped first). */
const CACHE_MAX = 200_000;
/** A "server gave no verdict" warning per server at most this often. */
const WARN_EVERY_MS = 10_000;

function text(v: unknown): string {
  return typeof v === 'string' ? v : '';
}

export interface GateStats {
  asked: number;
  cacheHits: number;
  allowed: number;
  denied: number;
  unavailable: number;
  accountingSent: number;
  accountingFailed: number;
}

export class ViewerGate implements OttAccess {
  private servers = new Map<number, BillingServer>();
  private settings: GateSettings | undefined;
  maxSessions = 0;
  private cache = new Map<string, Decision>();
  /** The last verdict per key, for `when-unavailable: keep`. */
  private last = new Map<string, Decision>();
  private inflight = new Map<string, Promise<Decision>>();
  private kicks = new Map<string, number>();
  private listeners = new Set<() => void>();
  private endListeners = new Set<(stream: string, ip: string) => void>();
  private lastWarn = new Map<number, number>();
  private wasActive = false;
  /** The native engine's passes (absent: every request is judged here). */
  private passes: ViewerPasses | undefined;
  /** Pass key (`query\nip\nstream`) → the session it counts for, and back. */
  private sessionOfPass = new Map<string, string>();
  private passesOfSession = new Map<string, Set<string>>();
  readonly sessions: ViewerSessions;
  readonly stats: GateStats = {
    asked: 0,
    cacheHits: 0,
    allowed: 0,
    denied: 0,
    unavailable: 0,
    accountingSent: 0,
    accountingFailed: 0,
  };

  constructor(
    private readonly clock: Clock,
    private readonly log: Logger,
  ) {
    this.sessions = new ViewerSessions(
      clock,
      () => ({ idleMs: this.settings?.idleMs ?? 0, interimMs: this.settings?.interimMs ?? 0 }),
      this.account,
      this.foldPassUse,
    );
  }

  /** Hand out passes to `passes` from now on (main.ts: the native live engine). */
  usePasses(passes: ViewerPasses | undefined): void {
    this.passes?.revokeAll();
    this.passes = passes;
    passes?.setGated(this.active);
  }

  /** Playback needs a verdict: some server is enabled and the `cs` settings are applied. */
  get active(): boolean {
    if (!this.settings) return false;
    for (const s of this.servers.values()) if (s.enabled) return true;
    return false;
  }

  onChange(fn: () => void): () => void {
    this.listeners.add(fn);
    return () => this.listeners.delete(fn);
  }

  onSessionEnd(fn: (stream: string, ip: string) => void): () => void {
    this.endListeners.add(fn);
    return () => this.endListeners.delete(fn);
  }

  configure(settings: GateSettings | undefined): void {
    this.settings = settings;
    this.changed();
  }

  setServer(server: BillingServer): void {
    this.servers.set(server.id, server);
    this.changed();
  }

  deleteServer(id: number): void {
    this.servers.delete(id);
    this.changed();
  }

  /** Verdicts given before a change of servers or settings are not reused. */
  private changed(): void {
    this.cache.clear();
    // Passes follow verdicts: none outlives a change of servers or settings.
    this.passes?.revokeAll();
    this.sessionOfPass.clear();
    this.passesOfSession.clear();
    const active = this.active;
    this.passes?.setGated(active);
    if (active === this.wasActive) return;
    this.wasActive = active;
    if (!active) this.sessions.closeAll('shutdown');
    this.log.info({ active }, active ? 'viewer authorisation on' : 'viewer authorisation off');
    for (const fn of [...this.listeners]) fn();
  }

  /** A loopback request without credentials that may play without a verdict (the admin API's
   *  rule: the socket's peer, no proxy forwarded it, sluice did not send it itself;
   *  src/util/loopback.ts). */
  anonymous(conn: Endpoints, headers: IncomingHttpHeaders = {}): boolean {
    return !!this.settings?.loopbackAnonymous && localRequest(conn, headers);
  }

  /** The verdict for one playback request; opens or continues its session. */
  async admit(r: ViewerRequest): Promise<Admission> {
    const st = this.settings;
    if (!st || !this.active) return { ok: true, query: '' };
    const token = text(r.query.token);
    const login = text(r.query.login);
    const password = text(r.query.password);
    if (!token && !login) {
      if (this.anonymous(r.socket ?? { remoteAddress: r.ip }, r.headers))
        return { ok: true, query: '' };
      return {
        ok: false,
        status: 401,
        message: 'Viewer credentials required: add ?token=… (or ?login=…&password=…) to the URL',
      };
    }
    const identity = login || token;
    const kickKey = `${identity}\n${r.stream}`;
    const kickedUntil = this.kicks.get(kickKey);
    if (kickedUntil !== undefined) {
      if (this.clock.monotonic() < kickedUntil)
        return { ok: false, status: 403, message: 'Session ended by the operator' };
      this.kicks.delete(kickKey);
    }
    const values: TemplateValues = {
      login: identity,
      password,
      token,
      ip: r.ip,
      stream: r.stream,
      user_agent: r.userAgent,
    };
    let session = this.sessions.find(identity, r.stream, r.ip);
    const decision = await this.decide(
      `${r.stream}\n${r.ip}\n${token}\n${login}\n${password}`,
      identity,
      { ...values, session: session?.id ?? '' },
    );
    if (!decision.allowed)
      return {
        ok: false,
        status: 403,
        message: decision.reason ? `Refused by billing: ${decision.reason}` : 'Refused by billing',
      };
    // The session may have been opened by a concurrent request meanwhile.
    session = this.sessions.find(identity, r.stream, r.ip);
    if (!session) {
      if (this.maxSessions > 0 && this.sessions.countOf(identity) >= this.maxSessions)
        return {
          ok: false,
          status: 403,
          message: `Too many sessions for this viewer (user-default.max-sessions ${this.maxSessions})`,
        };
      session = this.sessions.open({
        identity,
        login,
        token,
        ip: r.ip,
        stream: r.stream,
        userAgent: r.userAgent,
        server: decision.server,
      });
    }
    this.sessions.touch(session, r.res);
    const q = new URLSearchParams();
    if (token) q.set('token', token);
    if (login) {
      q.set('login', login);
      q.set('password', password);
    }
    const query = q.toString();
    // The URIs this viewer is given carry `query`: the native engine may answer those for as
    // long as the verdict is cached.
    if (this.passes && decision.untilMono !== undefined) {
      const ttl = decision.untilMono - this.clock.monotonic();
      if (ttl > 0) this.grant(query, r.ip, r.stream, ttl, session.id);
    }
    return { ok: true, query, session };
  }

  private grant(query: string, ip: string, stream: string, ttl: number, sessionId: string): void {
    this.passes!.grant(query, ip, stream, ttl);
    const key = `${query}\n${ip}\n${stream}`;
    this.sessionOfPass.set(key, sessionId);
    const keys = this.passesOfSession.get(sessionId) ?? new Set<string>();
    this.passesOfSession.set(sessionId, keys);
    keys.add(key);
  }

  /** Native responses count as the session's requests and bytes. */
  private readonly foldPassUse = (): void => {
    if (!this.passes) return;
    const now = this.clock.monotonic();
    for (const u of this.passes.takePassUse()) {
      const id = this.sessionOfPass.get(`${u.query}\n${u.ip}\n${u.stream}`);
      const s = id === undefined ? undefined : this.sessions.get(id);
      if (!s) continue;
      s.requests += u.requests;
      s.doneBytes += u.bytes;
      s.lastMono = now;
    }
  };

  /** A closed session's passes go with it. */
  private revokePasses(s: ViewerSession): void {
    const keys = this.passesOfSession.get(s.id);
    if (!keys) return;
    this.passesOfSession.delete(s.id);
    for (const key of keys) {
      this.sessionOfPass.delete(key);
      const [query = '', ip = '', stream = ''] = key.split('\n');
      this.passes?.revoke(query, ip, stream);
    }
  }

  /** End a session now; its viewer is refused on that stream for `kick-sec`. */
  kick(id: string): ViewerSession | undefined {
    const s = this.sessions.get(id);
    if (!s) return undefined;
    const kickMs = this.settings?.kickMs ?? 0;
    if (kickMs > 0) this.kicks.set(`${s.identity}\n${s.stream}`, this.clock.monotonic() + kickMs);
    // Its verdicts are dropped too: whatever comes next is asked afresh.
    for (const key of this.cache.keys())
      if (key.startsWith(`${s.stream}\n${s.ip}\n`)) this.cache.delete(key);
    this.sessions.close(s, 'kicked');
    return s;
  }

  close(): void {
    this.sessions.closeAll('shutdown');
    this.listeners.clear();
    this.endListeners.clear();
  }

  private decide(key: string, identity: string, values: TemplateValues): Promise<Decision> {
    const now = this.clock.monotonic();
    const hit = this.cache.get(key);
    if (hit?.untilMono !== undefined && hit.untilMono > now) {
      this.stats.cacheHits++;
      return Promise.resolve(hit);
    }
    let p = this.inflight.get(key);
    if (!p) {
      p = this.ask(key, identity, values).finally(() => this.inflight.delete(key));
      this.inflight.set(key, p);
    }
    return p;
  }

  private async ask(key: string, identity: string, values: TemplateValues): Promise<Decision> {
    const st = this.settings!;
    const candidates = serversFor(this.servers.values(), identity);
    if (candidates.length === 0)
      return this.remember(key, { allowed: false, reason: 'no billing server serves this login' });
    for (const server of candidates) {
      this.stats.asked++;
      const { judgement } = await askServer(server, { ...values, event: 'auth' }, this.log);
      if (judgement.verdict) {
        const d: Decision = { allowed: judgement.allowed, server };
        if (judgement.reason) d.reason = judgement.reason;
        this.last.set(key, d);
        if (this.last.size > CACHE_MAX) this.last.delete(this.last.keys().next().value!);
        return this.remember(key, d);
      }
      this.warn(server, judgement.why);
    }
    this.stats.unavailable++;
    const policy = st.whenUnavailable;
    const kept = this.last.get(key);
    const d: Decision =
      policy === 'allow'
        ? { allowed: true, server: candidates[0]! }
        : policy === 'keep' && kept
          ? kept
          : { allowed: false, reason: 'billing unavailable' };
    return this.remember(key, d);
  }

  private remember(key: string, d: Decision): Decision {
    const st = this.settings!;
    if (d.allowed) this.stats.allowed++;
    else this.stats.denied++;
    const ttl = d.allowed ? st.verdictCacheMs : st.denialCacheMs;
    if (ttl <= 0) return d;
    const cached: Decision = { ...d, untilMono: this.clock.monotonic() + ttl };
    this.cache.delete(key);
    this.cache.set(key, cached);
    if (this.cache.size > CACHE_MAX) this.cache.delete(this.cache.keys().next().value!);
    return cached;
  }

  private warn(server: BillingServer, why: string): void {
    const now = this.clock.monotonic();
    const last = this.lastWarn.get(server.id);
    if (last !== undefined && now - last < WARN_EVERY_MS) return;
    this.lastWarn.set(server.id, now);
    this.log.warn({ server: server.name, url: server.url, why }, 'billing server gave no verdict');
  }

  /** Start, interim and stop notifications to the server that authorised the session. */
  private readonly account = (s: ViewerSession, event: SessionEvent, reason?: CloseReason) => {
    if (event === 'stop') {
      // What the engine served since the last sweep, then no more.
      this.foldPassUse();
      this.revokePasses(s);
      for (const fn of [...this.endListeners]) fn(s.stream, s.ip);
    }
    const bytes = this.sessions.bytesOf(s);
    const duration = Math.round((this.clock.monotonic() - s.openedMono) / 1000);
    this.log.info(
      {
        session: s.id,
        viewer: s.viewer,
        stream: s.stream,
        ip: s.ip,
        event,
        bytes,
        duration,
        reason,
      },
      `viewer session ${event}`,
    );
    const server = s.server && (this.servers.get(s.server.id) ?? s.server);
    if (!server?.accounting) return;
    const values: TemplateValues = {
      event,
      login: s.identity,
      token: s.token,
      ip: s.ip,
      stream: s.stream,
      session: s.id,
      user_agent: s.userAgent,
      bytes: String(bytes),
      duration: String(duration),
    };
    // Delivered when the server answers 2xx; what it says is not a verdict here.
    void askServer(server, values, this.log).then(({ judgement, status }) => {
      if (status !== undefined && status < 300) this.stats.accountingSent++;
      else {
        this.stats.accountingFailed++;
        this.warn(
          server,
          `accounting ${event}: ${judgement.verdict ? `HTTP ${status}` : judgement.why}`,
        );
      }
    });
  };
}
