// `ps1` output: the ps1 server (docs/ps1.md). Listens on `port` (on `bind-if`), admits clients
// by login/password or as cluster peers (`peer-auth`) through a stateless cookie handshake, and
// sends each its own session of the stream: DATA, retransmissions on NACK within a budget,
// ACKACK echoes, keep-alives. A session is bound to its client's address and port.
import { randomInt } from 'node:crypto';
import dgram from 'node:dgram';
import { bool, int, str } from '../../config/spec-values.ts';
import { PEER_AUTH_NO_DOMAIN, peerProof } from '../../engine/cluster.ts';
import type { TransportMetrics } from '../../engine/input.ts';
import type { OutputContext, StreamOutput } from '../../engine/output.ts';
import {
  CookieJar,
  clientProof,
  equal,
  Ps1Passphrase,
  serverProof,
} from '../../protocols/ps1/handshake.ts';
import {
  decode,
  encodeAccept,
  encodeAckAck,
  encodeBye,
  encodeChallenge,
  encodeKeepalive,
  encodeReject,
  Flag,
  type Packet,
  Reason,
  reasonText,
  TS_PACKET_SIZE,
} from '../../protocols/ps1/packet.ts';
import type { Timer } from '../../util/clock.ts';
import { resolveInterface } from '../../util/net.ts';
import { LAST_SEQ, ServerSession } from './session.ts';

/** Housekeeping period: time-outs, keep-alives, buffer trimming. */
export const PS1_TICK_MS = 100;
/** A session the client has not been heard on for this long is dropped. */
export const PS1_SESSION_IDLE_MS = 10_000;
/** A KEEPALIVE goes to a client that got no DATA for this long. */
export const PS1_KEEPALIVE_MS = 1000;
/** Answers to strangers (CHALLENGE, BYE to an unknown session) per second, at most. */
export const PS1_ANSWERS_PER_S = 2000;
/** Nothing a client sends is larger than this (a full NACK is 1,090 bytes). */
export const PS1_MAX_INBOUND = 1500;
/** The RTT a session assumes until the client's first ACK reports its own. */
const INITIAL_RTT_MS = 100;
/** The buffer a session gets beyond the client's latency (NACK and retransmission in flight). */
const BUFFER_MARGIN_MS = 1000;

type Counters = Record<
  | 'hellos'
  | 'challenges'
  | 'helloDropped'
  | 'accepted'
  | 'refused'
  | 'foreignPeer'
  | 'unknownSession'
  | 'junk'
  | 'oversized'
  | 'badCookie'
  | 'sendErrors',
  number
>;

export class Ps1Output implements StreamOutput {
  private sock: dgram.Socket | null = null;
  private tick: Timer | null = null;
  private readonly jar = new CookieJar();
  private readonly sessions = new Map<number, ServerSession>();
  private readonly byPeer = new Map<string, ServerSession>();
  private passphrase: Ps1Passphrase | null = null;
  private proof = '';
  private pending: Buffer | null = null;
  private answerTokens = PS1_ANSWERS_PER_S;
  private answerRefill = 0;
  private lastRejection = '';
  private lastError = '';
  private closed = false;
  private readonly perDatagram: number;
  /** Counters of sessions that ended (so /metrics totals never go back). */
  private readonly ended = { sent: 0, retransmitted: 0, nacked: 0, expired: 0, capped: 0 };
  readonly counters: Counters = {
    hellos: 0,
    challenges: 0,
    helloDropped: 0,
    accepted: 0,
    refused: 0,
    foreignPeer: 0,
    unknownSession: 0,
    junk: 0,
    oversized: 0,
    badCookie: 0,
    sendErrors: 0,
  };

  constructor(
    private readonly cfg: Record<string, unknown>,
    private readonly ctx: OutputContext,
  ) {
    this.perDatagram = Math.max(1, Math.min(7, int(cfg, 'packets-per-datagram', 7)));
  }

  async start(): Promise<void> {
    const port = int(this.cfg, 'port', 0);
    if (port < 1) throw new Error('ps1 output: port is not set');
    if (bool(this.cfg, 'peer-auth', false)) {
      const cluster = this.ctx.cluster?.();
      if (!cluster?.domain) throw new Error(`ps1 output: ${PEER_AUTH_NO_DOMAIN}`);
      this.proof = peerProof(cluster.domain);
    }
    const passphrase = str(this.cfg, 'passphrase');
    if (passphrase) this.passphrase = new Ps1Passphrase(passphrase);
    const local = resolveInterface(str(this.cfg, 'bind-if'));
    const sock = dgram.createSocket({ type: 'udp4' });
    await new Promise<void>((resolve, reject) => {
      sock.once('error', reject);
      sock.bind({ address: local || undefined, port }, () => {
        sock.off('error', reject);
        resolve();
      });
    });
    sock.on('error', (err) => {
      this.counters.sendErrors++;
      this.lastError = err.message;
    });
    sock.on('message', (msg, rinfo) => this.onMessage(msg, rinfo.address, rinfo.port));
    this.sock = sock;
    this.tick = this.ctx.clock.setInterval(() => this.housekeeping(), PS1_TICK_MS);
  }

  private now(): number {
    return this.ctx.clock.monotonic();
  }

  private send(d: Buffer, address: string, port: number): void {
    this.sock?.send(d, port, address, (err) => {
      if (err) {
        this.counters.sendErrors++;
        this.lastError = err.message;
      }
    });
  }

  /** One token of the answers-to-strangers budget (CHALLENGE, BYE to unknown sessions). */
  private answerToken(now: number): boolean {
    if (now - this.answerRefill >= 1000) {
      this.answerTokens = PS1_ANSWERS_PER_S;
      this.answerRefill = now;
    }
    if (this.answerTokens <= 0) return false;
    this.answerTokens--;
    return true;
  }

  private onMessage(msg: Buffer, address: string, port: number): void {
    if (this.closed) return;
    if (msg.length > PS1_MAX_INBOUND) {
      this.counters.oversized++;
      return;
    }
    const p = decode(msg);
    if (!p) {
      this.counters.junk++;
      return;
    }
    const now = this.now();
    switch (p.type) {
      case 'hello':
        this.onHello(p, address, port, now);
        return;
      case 'auth':
        this.onAuth(p, address, port, now);
        return;
      case 'nack':
      case 'ack':
      case 'bye':
        this.onSessionPacket(p, address, port, now);
        return;
      default:
        this.counters.junk++; // server → client types have no business here
    }
  }

  private onHello(
    p: Extract<Packet, { type: 'hello' }>,
    address: string,
    port: number,
    now: number,
  ): void {
    this.counters.hellos++;
    if (!this.answerToken(now)) {
      this.counters.helloDropped++;
      return;
    }
    if (p.version !== 1) {
      this.send(encodeReject(p.cnonce, Reason.version), address, port);
      return;
    }
    this.counters.challenges++;
    const snonce = this.jar.snonce(address, port, p.cnonce, now);
    this.send(encodeChallenge(p.cnonce, snonce), address, port);
  }

  private refuse(
    p: Extract<Packet, { type: 'auth' }>,
    address: string,
    port: number,
    reason: number,
  ): void {
    this.counters.refused++;
    this.lastRejection = `${address}:${port} (login "${p.login}"): ${reasonText(reason)}`;
    this.ctx.log.warn(`ps1 output refused ${this.lastRejection}`);
    this.send(encodeReject(p.cnonce, reason), address, port);
  }

  /** The refusal reason of an AUTH whose cookie is good, or the client's secret. */
  private admit(p: Extract<Packet, { type: 'auth' }>): { reason: number } | { secret: string } {
    const encrypted = (p.flags & Flag.encrypted) !== 0;
    if (encrypted !== (this.passphrase !== null)) return { reason: Reason.encryption };
    if (this.passphrase && !equal(this.passphrase.keyCheck(p.snonce, p.cnonce), p.keyCheck))
      return { reason: Reason.passphrase };
    if (p.flags & Flag.peerAuth) {
      if (!this.proof) return { reason: Reason.peerAuthOff };
      const ok = equal(clientProof(this.proof, p.snonce, p.cnonce, p.login), p.proof);
      return ok ? { secret: this.proof } : { reason: Reason.peerDomain };
    }
    const login = str(this.cfg, 'ps1-server-login');
    const password = str(this.cfg, 'ps1-server-password');
    // peer-auth alone (no login or password set) admits only the cluster's peers.
    if (this.proof && !login && !password) return { reason: Reason.credentials };
    if (login && p.login !== login) return { reason: Reason.credentials };
    const ok = equal(clientProof(password, p.snonce, p.cnonce, p.login), p.proof);
    return ok ? { secret: password } : { reason: Reason.credentials };
  }

  private onAuth(
    p: Extract<Packet, { type: 'auth' }>,
    address: string,
    port: number,
    now: number,
  ): void {
    if (!this.jar.check(address, port, p.cnonce, p.snonce, now)) {
      this.counters.badCookie++;
      if (this.answerToken(now)) this.send(encodeReject(p.cnonce, Reason.cookie), address, port);
      return;
    }
    const key = `${address}:${port}`;
    const existing = this.byPeer.get(key);
    if (existing && equal(existing.cnonce, p.cnonce)) {
      this.send(existing.accept, address, port); // our ACCEPT was lost: the same again
      return;
    }
    const verdict = this.admit(p);
    if ('reason' in verdict) {
      this.refuse(p, address, port, verdict.reason);
      return;
    }
    if (existing) this.drop(existing, Reason.closed, false); // the client started again
    if (this.sessions.size >= int(this.cfg, 'ps1-server-max-sessions', 16)) {
      this.refuse(p, address, port, Reason.full);
      return;
    }
    let id = 0;
    while (id === 0 || this.sessions.has(id)) id = randomInt(1, 0xffffffff);
    const bufferMs = Math.min(
      int(this.cfg, 'ps1-server-buffer-ms', 10_000),
      p.latencyMs + BUFFER_MARGIN_MS,
    );
    const accept = encodeAccept(
      id,
      p.cnonce,
      serverProof(verdict.secret, p.cnonce, p.snonce, id, p.login),
      bufferMs,
    );
    const s = new ServerSession(
      id,
      address,
      port,
      p.login,
      (p.flags & Flag.peerAuth) !== 0,
      Buffer.from(p.cnonce),
      accept,
      bufferMs,
      int(this.cfg, 'ps1-server-overhead-pc', 25),
      INITIAL_RTT_MS,
      this.passphrase?.session(p.snonce, p.cnonce, id) ?? null,
      now,
    );
    this.sessions.set(id, s);
    this.byPeer.set(key, s);
    this.counters.accepted++;
    this.ctx.log.info({ peer: key, login: p.login, session: id }, 'ps1 output: client admitted');
    this.send(accept, address, port);
  }

  private onSessionPacket(
    p: Extract<Packet, { type: 'nack' | 'ack' | 'bye' }>,
    address: string,
    port: number,
    now: number,
  ): void {
    const s = this.sessions.get(p.session);
    if (!s) {
      this.counters.unknownSession++;
      // A client of a session this server no longer has learns it at once (a server restart).
      if (p.type !== 'bye' && this.answerToken(now))
        this.send(encodeBye(p.session, Reason.timeout), address, port);
      return;
    }
    if (s.address !== address || s.port !== port) {
      this.counters.foreignPeer++; // bound to its peer: forged or replayed from elsewhere
      return;
    }
    s.lastHeard = now;
    if (p.type === 'ack') {
      if (p.rttUs > 0) s.rttMs = p.rttUs / 1000;
      s.clientLost = p.lost;
      s.clientRecovered = p.recovered;
      this.send(encodeAckAck(s.id, p.echo), address, port);
    } else if (p.type === 'nack') {
      for (const d of s.buffer.retransmit(p.ranges, now, s.rttMs)) this.send(d, address, port);
    } else {
      this.ctx.log.info({ peer: s.key, reason: reasonText(p.reason) }, 'ps1 output: client left');
      this.drop(s, Reason.closed, false);
    }
  }

  private drop(s: ServerSession, reason: number, tell: boolean): void {
    if (tell) this.send(encodeBye(s.id, reason), s.address, s.port);
    this.sessions.delete(s.id);
    if (this.byPeer.get(s.key) === s) this.byPeer.delete(s.key);
    const c = s.counters;
    this.ended.sent += c.sent;
    this.ended.retransmitted += c.retransmitted;
    this.ended.nacked += c.nacked;
    this.ended.expired += c.expired;
    this.ended.capped += c.capped;
  }

  private housekeeping(): void {
    const now = this.now();
    for (const s of [...this.sessions.values()]) {
      if (now - s.lastHeard > PS1_SESSION_IDLE_MS) {
        this.ctx.log.info({ peer: s.key }, 'ps1 output: client timed out');
        this.drop(s, Reason.timeout, true);
        continue;
      }
      if (now - s.lastSent >= PS1_KEEPALIVE_MS) {
        s.lastSent = now;
        this.send(encodeKeepalive(s.id), s.address, s.port);
      }
      s.buffer.trim(now);
    }
  }

  packets(buf: Buffer): void {
    if (!this.sock || this.sessions.size === 0) {
      this.pending = null;
      return;
    }
    const full = TS_PACKET_SIZE * this.perDatagram;
    let all = buf;
    if (this.pending) {
      all = Buffer.concat([this.pending, buf]);
      this.pending = null;
    }
    let o = 0;
    const now = this.now();
    for (; o + full <= all.length; o += full) this.sendData(all.subarray(o, o + full), now);
    // A tail shorter than a datagram waits for the next call (copied: `buf` is only lent).
    if (o < all.length) this.pending = Buffer.from(all.subarray(o));
  }

  private sendData(payload: Buffer, now: number): void {
    for (const s of this.sessions.values()) {
      if (s.seq > LAST_SEQ) {
        this.drop(s, Reason.exhausted, true);
        continue;
      }
      this.send(s.data(payload, now), s.address, s.port);
    }
  }

  end(): void {
    // The stream stopped: what is pending goes now (a short datagram is valid ps1).
    const p = this.pending;
    this.pending = null;
    if (p?.length) this.sendData(p, this.now());
  }

  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    this.tick?.cancel();
    this.tick = null;
    for (const s of [...this.sessions.values()]) this.drop(s, Reason.streamStopped, true);
    const sock = this.sock;
    this.sock = null;
    if (sock) await new Promise<void>((resolve) => sock.close(() => resolve()));
  }

  private totals() {
    const t = { ...this.ended };
    for (const s of this.sessions.values()) {
      const c = s.counters;
      t.sent += c.sent;
      t.retransmitted += c.retransmitted;
      t.nacked += c.nacked;
      t.expired += c.expired;
      t.capped += c.capped;
    }
    return t;
  }

  metrics(): TransportMetrics {
    const rtt = Math.max(0, ...[...this.sessions.values()].map((s) => s.rttMs));
    return {
      protocol: 'ps1',
      rttSeconds: rtt / 1000,
      packets: {
        ...this.totals(),
        refused: this.counters.refused,
        foreignPeer: this.counters.foreignPeer,
        junk: this.counters.junk,
      },
    };
  }

  status(): Record<string, unknown> {
    return {
      type: 'ps1',
      port: this.sock?.address().port ?? int(this.cfg, 'port', 0),
      encrypted: this.passphrase !== null,
      peerAuth: this.proof !== '',
      sessions: [...this.sessions.values()].map((s) => s.status()),
      ...this.totals(),
      ...this.counters,
      ...(this.lastRejection ? { lastRejection: this.lastRejection } : {}),
      ...(this.lastError ? { lastError: this.lastError } : {}),
    };
  }
}
