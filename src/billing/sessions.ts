// Viewer sessions: one per (viewer, stream, client address), opened by the first authorised
// request, kept alive by later ones and by open responses (an HTTP-TS connection), closed after
// `session-idle-sec` without either, or by the operator. Each counts the bytes its responses
// sent and has its start, interim and stop notifications sent (docs/billing.md).
import { randomBytes } from 'node:crypto';
import type { Clock, Timer } from '../util/clock.ts';
import { tokenFingerprint } from '../util/credentials.ts';
import type { BillingServer } from './server.ts';

/** A response a session counts: the bytes its socket wrote while it was open. */
export interface TrackedResponse {
  readonly socket: { readonly bytesWritten: number } | null;
  once(event: 'close', fn: () => void): unknown;
  destroy(): unknown;
}

export interface ViewerSession {
  readonly id: string;
  /** The login, or the token when the viewer gave only a token: a key, never shown (`viewer`). */
  readonly identity: string;
  readonly login: string;
  /** Kept for the billing server's notifications only: shown anywhere, it would let whoever
   *  reads it play as this viewer. */
  readonly token: string;
  /** Who it is as shown (session list, logs): the login, or the token's fingerprint. */
  readonly viewer: string;
  readonly ip: string;
  readonly stream: string;
  readonly userAgent: string;
  /** The billing server that authorised it, as it was then: accounting goes to its current
   *  record of the same id, or to this one when it was removed meanwhile. */
  server: BillingServer | undefined;
  readonly openedAt: number;
  readonly openedMono: number;
  lastMono: number;
  /** Bytes of responses that have finished. */
  doneBytes: number;
  requests: number;
  nextInterimMono: number;
  /** Open responses: their socket (kept: a finished response lets go of it) and its
   *  bytesWritten when they began. */
  readonly open: Map<TrackedResponse, Counted>;
}

interface Counted {
  socket: { readonly bytesWritten: number } | null;
  start: number;
}

function sent(c: Counted): number {
  return Math.max(0, (c.socket?.bytesWritten ?? c.start) - c.start);
}

export type SessionEvent = 'start' | 'interim' | 'stop';

/** Why a session closed, in its stop notification and the log. */
export type CloseReason = 'idle' | 'kicked' | 'shutdown';

export interface SessionTimes {
  idleMs: number;
  /** 0: no interim notifications. */
  interimMs: number;
}

/** The sweep that closes idle sessions and sends interims runs this often while any is open. */
export const SWEEP_MS = 1000;

export class ViewerSessions {
  private byId = new Map<string, ViewerSession>();
  private byKey = new Map<string, ViewerSession>();
  private perIdentity = new Map<string, number>();
  private sweeper: Timer | undefined;

  constructor(
    private readonly clock: Clock,
    private readonly times: () => SessionTimes,
    private readonly notify: (s: ViewerSession, event: SessionEvent, reason?: CloseReason) => void,
    /** Runs first in every sweep: activity seen elsewhere (the native engine) is folded in. */
    private readonly beforeSweep: () => void = () => {},
  ) {}

  get size(): number {
    return this.byId.size;
  }

  private static key(identity: string, stream: string, ip: string): string {
    return `${identity}\n${stream}\n${ip}`;
  }

  find(identity: string, stream: string, ip: string): ViewerSession | undefined {
    return this.byKey.get(ViewerSessions.key(identity, stream, ip));
  }

  get(id: string): ViewerSession | undefined {
    return this.byId.get(id);
  }

  /** Sessions `identity` has open, on any stream. */
  countOf(identity: string): number {
    return this.perIdentity.get(identity) ?? 0;
  }

  open(v: {
    identity: string;
    login: string;
    token: string;
    ip: string;
    stream: string;
    userAgent: string;
    server: BillingServer | undefined;
  }): ViewerSession {
    const now = this.clock.monotonic();
    const interimMs = this.times().interimMs;
    const s: ViewerSession = {
      ...v,
      viewer: v.login || tokenFingerprint(v.token),
      id: randomBytes(9).toString('base64url'),
      openedAt: this.clock.now(),
      openedMono: now,
      lastMono: now,
      doneBytes: 0,
      requests: 0,
      nextInterimMono: interimMs > 0 ? now + interimMs : Number.POSITIVE_INFINITY,
      open: new Map(),
    };
    this.byId.set(s.id, s);
    this.byKey.set(ViewerSessions.key(s.identity, s.stream, s.ip), s);
    this.perIdentity.set(s.identity, this.countOf(s.identity) + 1);
    this.sweeper ??= this.clock.setInterval(this.sweep, SWEEP_MS);
    this.notify(s, 'start');
    return s;
  }

  /** A request of `s`: it counts as activity, and `res` (if any) is counted until it closes. */
  touch(s: ViewerSession, res?: TrackedResponse): void {
    s.lastMono = this.clock.monotonic();
    s.requests++;
    if (!res || s.open.has(res)) return;
    const socket = res.socket;
    s.open.set(res, { socket, start: socket?.bytesWritten ?? 0 });
    res.once('close', () => {
      const c = s.open.get(res);
      if (c === undefined) return;
      s.open.delete(res);
      s.doneBytes += sent(c);
      s.lastMono = this.clock.monotonic();
    });
  }

  /** Bytes sent so far, open responses included. */
  bytesOf(s: ViewerSession): number {
    let n = s.doneBytes;
    for (const c of s.open.values()) n += sent(c);
    return n;
  }

  /** Close `s`: its open responses are cut, its stop notification sent. */
  close(s: ViewerSession, reason: CloseReason): void {
    if (this.byId.get(s.id) !== s) return;
    this.byId.delete(s.id);
    this.byKey.delete(ViewerSessions.key(s.identity, s.stream, s.ip));
    const left = this.countOf(s.identity) - 1;
    if (left > 0) this.perIdentity.set(s.identity, left);
    else this.perIdentity.delete(s.identity);
    // Counted before the cut, so the stop notification has every byte sent.
    for (const c of s.open.values()) s.doneBytes += sent(c);
    const open = [...s.open.keys()];
    s.open.clear();
    for (const res of open) res.destroy();
    this.notify(s, 'stop', reason);
    if (this.byId.size === 0) {
      this.sweeper?.cancel();
      this.sweeper = undefined;
    }
  }

  all(): IterableIterator<ViewerSession> {
    return this.byId.values();
  }

  closeAll(reason: CloseReason): void {
    for (const s of [...this.byId.values()]) this.close(s, reason);
  }

  private readonly sweep = (): void => {
    this.beforeSweep();
    const now = this.clock.monotonic();
    const { idleMs, interimMs } = this.times();
    for (const s of [...this.byId.values()]) {
      if (s.open.size === 0 && now - s.lastMono >= idleMs) {
        this.close(s, 'idle');
        continue;
      }
      if (now >= s.nextInterimMono) {
        s.nextInterimMono = interimMs > 0 ? now + interimMs : Number.POSITIVE_INFINITY;
        this.notify(s, 'interim');
      }
    }
  };
}
