// `ps1` input: the ps1 client (docs/ps1.md). Dials `address`:`port`, authenticates (login and
// password, or as a cluster peer with `peer-auth`) without sending a secret, then receives DATA
// into the receive window, NACKs gaps, ACKs every 100 ms and hands the engine what is due every
// 5 ms. Start and play time-outs, REJECTs and BYEs end the attempt with a message in words and
// it dials again after the backoff.
import dgram from 'node:dgram';
import { lookup } from 'node:dns/promises';
import { isIPv4 } from 'node:net';
import { bool, num, str } from '../../config/spec-values.ts';
import { PEER_AUTH_NO_DOMAIN, peerProof } from '../../engine/cluster.ts';
import type { InputContext, InputTransport, TransportMetrics } from '../../engine/input.ts';
import {
  clientProof,
  equal,
  newNonce,
  Ps1Passphrase,
  type SessionCipher,
  serverProof,
} from '../../protocols/ps1/handshake.ts';
import {
  DataFlag,
  decode,
  encodeAck,
  encodeAuth,
  encodeBye,
  encodeHello,
  encodeNack,
  Flag,
  KEY_CHECK_SIZE,
  MAX_NACK_RANGES,
  type Packet,
  Reason,
  reasonText,
  toRanges,
} from '../../protocols/ps1/packet.ts';
import { ReceiveWindow, type WindowCounters } from '../../protocols/ps1/receive-window.ts';
import { RttEstimator } from '../../protocols/ps1/rtt.ts';
import type { Timer } from '../../util/clock.ts';
import { Backoff } from '../common.ts';

/** Release, NACK and time-out checks run this often. */
export const PS1_RELEASE_TICK_MS = 5;
/** ACK (the client's keep-alive and RTT probe) period. */
export const PS1_ACK_MS = 100;
/** HELLO or AUTH is sent again this often until answered. */
export const PS1_HANDSHAKE_RESEND_MS = 500;
/** Datagrams larger than this are not ps1 DATA (20 + 7 × 188 = 1,336). */
const MAX_INBOUND = 1500;

type State = 'connecting' | 'authenticating' | 'playing' | 'waiting';

interface Attempt {
  sock: dgram.Socket;
  address: string;
  cnonce: Buffer;
  snonce: Buffer | null;
  auth: Buffer | null;
  session: number;
  secret: string;
  login: string;
  flags: number;
  startedAt: number;
  lastSend: number;
  lastAck: number;
  lastData: number;
  gotData: boolean;
  window: ReceiveWindow | null;
  rtt: RttEstimator;
  cipher: SessionCipher | null;
  challenged: boolean;
}

const ZERO_COUNTERS = (): WindowCounters => ({
  received: 0,
  retransmittedReceived: 0,
  recovered: 0,
  lost: 0,
  late: 0,
  duplicates: 0,
  outOfWindow: 0,
  nackedPackets: 0,
});

export class Ps1Input implements InputTransport {
  private readonly backoff: Backoff;
  private attempt: Attempt | null = null;
  private tick: Timer | null = null;
  private state: State = 'waiting';
  private closed = false;
  private passphrase: Ps1Passphrase | null = null;
  private connects = 0;
  private attempts = 0;
  private localPort = 0;
  private lastError = '';
  private lastRttMs = 0;
  /** Window counters of the sessions that ended. */
  private readonly past = ZERO_COUNTERS();
  private readonly counters = {
    nacks: 0,
    checkDropped: 0,
    foreign: 0,
    junk: 0,
    rejected: 0,
    bytes: 0,
  };

  constructor(
    private readonly cfg: Record<string, unknown>,
    private readonly ctx: InputContext,
  ) {
    this.backoff = new Backoff(ctx.clock);
  }

  start(): void {
    if (!str(this.cfg, 'address')) throw new Error('ps1 input: address is not set');
    if (num(this.cfg, 'port', 0) < 1) throw new Error('ps1 input: port is not set');
    const passphrase = str(this.cfg, 'passphrase');
    if (passphrase) this.passphrase = new Ps1Passphrase(passphrase);
    this.dial();
  }

  private now(): number {
    return this.ctx.clock.monotonic();
  }

  private dial(): void {
    if (this.closed) return;
    const host = str(this.cfg, 'address');
    if (isIPv4(host)) this.open(host);
    else
      lookup(host, { family: 4 }).then(
        (r) => this.open(r.address),
        (err: Error) => this.fail(`cannot resolve ${host}: ${err.message}`),
      );
  }

  /** The login and secret this input proves: the cluster's with peer-auth. */
  private credentials(): { login: string; secret: string; flags: number } {
    const flags = this.passphrase ? Flag.encrypted : 0;
    if (!bool(this.cfg, 'peer-auth', false)) {
      return {
        login: str(this.cfg, 'ps1-client-login'),
        secret: str(this.cfg, 'ps1-client-password'),
        flags,
      };
    }
    const cluster = this.ctx.cluster?.();
    if (!cluster?.domain) throw new Error(PEER_AUTH_NO_DOMAIN);
    return {
      login: cluster.nodeName,
      secret: peerProof(cluster.domain),
      flags: flags | Flag.peerAuth,
    };
  }

  private open(address: string): void {
    if (this.closed) return;
    let cred: ReturnType<Ps1Input['credentials']>;
    try {
      cred = this.credentials();
    } catch (err) {
      this.fail((err as Error).message);
      return;
    }
    const sock = dgram.createSocket({ type: 'udp4' });
    this.attempts++;
    const now = this.now();
    const a: Attempt = {
      sock,
      address,
      cnonce: newNonce(),
      snonce: null,
      auth: null,
      session: 0,
      secret: cred.secret,
      login: cred.login,
      flags: cred.flags,
      startedAt: now,
      lastSend: now,
      lastAck: now,
      lastData: now,
      gotData: false,
      window: null,
      rtt: new RttEstimator(num(this.cfg, 'ps1-client-rtt-ms', 300)),
      cipher: null,
      challenged: false,
    };
    this.attempt = a;
    this.state = 'connecting';
    sock.on('error', (err) => {
      if (this.attempt === a) this.fail(err.message);
    });
    sock.on('message', (msg, rinfo) => {
      if (this.attempt !== a) return;
      if (rinfo.address !== a.address || rinfo.port !== this.port()) {
        this.counters.foreign++;
        return;
      }
      this.onMessage(a, msg);
    });
    sock.bind(0, () => {
      if (this.attempt !== a) return;
      this.localPort = sock.address().port;
      this.sendHello(a);
    });
    this.tick = this.ctx.clock.setInterval(() => this.onTick(a), PS1_RELEASE_TICK_MS);
  }

  private port(): number {
    return num(this.cfg, 'port', 0);
  }

  private send(a: Attempt, d: Buffer): void {
    a.sock.send(d, this.port(), a.address, (err) => {
      if (err && this.attempt === a) this.lastError = err.message;
    });
  }

  private sendHello(a: Attempt): void {
    a.lastSend = this.now();
    this.send(a, encodeHello(a.cnonce, a.flags));
  }

  private onMessage(a: Attempt, msg: Buffer): void {
    if (msg.length > MAX_INBOUND) {
      this.counters.junk++;
      return;
    }
    const p = decode(msg);
    if (!p) {
      this.counters.junk++;
      return;
    }
    switch (p.type) {
      case 'challenge':
        this.onChallenge(a, p);
        return;
      case 'accept':
        this.onAccept(a, p);
        return;
      case 'reject':
        if (!equal(p.cnonce, a.cnonce) || this.state === 'playing') {
          this.counters.foreign++;
          return;
        }
        this.counters.rejected++;
        if (p.reason === Reason.cookie) {
          a.snonce = null; // the challenge expired: start the handshake again at once
          a.auth = null;
          this.state = 'connecting';
          this.sendHello(a);
          return;
        }
        this.fail(`refused by the server: ${reasonText(p.reason)}`);
        return;
      default:
        if (a.session === 0 || p.type === 'hello' || p.type === 'auth') {
          this.counters.junk++;
          return;
        }
        if (p.session !== a.session) {
          this.counters.foreign++;
          return;
        }
        this.onSessionPacket(a, p);
    }
  }

  private onChallenge(a: Attempt, p: Extract<Packet, { type: 'challenge' }>): void {
    if (!equal(p.cnonce, a.cnonce) || this.state !== 'connecting') return;
    a.snonce = Buffer.from(p.snonce);
    a.challenged = true;
    a.auth = encodeAuth({
      cnonce: a.cnonce,
      snonce: a.snonce,
      flags: a.flags,
      latencyMs: num(this.cfg, 'ps1-client-latency-ms', 3000),
      proof: clientProof(a.secret, a.snonce, a.cnonce, a.login),
      keyCheck: this.passphrase?.keyCheck(a.snonce, a.cnonce) ?? Buffer.alloc(KEY_CHECK_SIZE),
      login: a.login,
    });
    this.state = 'authenticating';
    a.lastSend = this.now();
    this.send(a, a.auth);
  }

  private onAccept(a: Attempt, p: Extract<Packet, { type: 'accept' }>): void {
    if (!equal(p.cnonce, a.cnonce) || !a.snonce || this.state !== 'authenticating') return;
    const expected = serverProof(a.secret, a.cnonce, a.snonce, p.session, a.login);
    if (!equal(expected, p.proof)) {
      this.fail('the server’s proof does not verify: it does not know this input’s secret');
      return;
    }
    a.session = p.session;
    a.cipher = this.passphrase?.session(a.snonce, a.cnonce, p.session) ?? null;
    a.window = new ReceiveWindow(num(this.cfg, 'ps1-client-latency-ms', 3000), a.rtt);
    this.state = 'playing';
    this.connects++;
    this.ctx.log.info(
      { server: `${a.address}:${this.port()}`, session: p.session, bufferMs: p.bufferMs },
      'ps1 input: accepted',
    );
    if (this.connects > 1) this.ctx.onDiscontinuity?.('ps1 reconnected');
  }

  private onSessionPacket(a: Attempt, p: Packet): void {
    const now = this.now();
    switch (p.type) {
      case 'data': {
        const w = a.window!;
        const checkLost = num(this.cfg, 'check-lost', 0);
        if (checkLost > 0 && Math.random() * 100 < checkLost) {
          this.counters.checkDropped++;
          return;
        }
        const encrypted = (p.flags & DataFlag.encrypted) !== 0;
        if (encrypted !== (a.cipher !== null)) {
          this.counters.junk++;
          return;
        }
        const payload = a.cipher ? a.cipher.apply(p.seq, p.payload) : p.payload;
        if (
          w.push(p.seq, p.timestamp, payload, now, (p.flags & DataFlag.retransmission) !== 0) ===
          'stored'
        ) {
          a.lastData = now;
          if (!a.gotData) {
            a.gotData = true;
            this.lastError = '';
            this.backoff.reset();
          }
        }
        return;
      }
      case 'ackack':
        a.rtt.sample(((this.echoNow() - p.echo) >>> 0) / 1000);
        return;
      case 'keepalive':
        return;
      case 'bye':
        this.fail(`the server ended the session: ${reasonText(p.reason)}`, false);
        return;
      default:
        this.counters.junk++;
    }
  }

  /** The client's clock as ACK echoes carry it: µs mod 2^32. */
  private echoNow(): number {
    return Math.floor(this.now() * 1000) >>> 0;
  }

  private onTick(a: Attempt): void {
    if (this.attempt !== a) return;
    const now = this.now();
    const startS = num(this.cfg, 'ps1-client-start-timeout', 10);
    const w = a.window;
    if (!w || !a.gotData) {
      if (now - a.startedAt >= startS * 1000) {
        this.fail(
          w
            ? `accepted, but no data within ${startS} s (ps1-client-start-timeout)`
            : a.challenged
              ? `the server did not accept within ${startS} s (ps1-client-start-timeout)`
              : `no answer from the server within ${startS} s (ps1-client-start-timeout)`,
        );
        return;
      }
      if (!w && now - a.lastSend >= PS1_HANDSHAKE_RESEND_MS) {
        if (a.auth) {
          a.lastSend = now;
          this.send(a, a.auth);
        } else this.sendHello(a);
      }
      if (!w) return;
    }
    const playS = num(this.cfg, 'ps1-client-play-timeout', 10);
    if (a.gotData && now - a.lastData >= playS * 1000) {
      this.fail(`no data for ${playS} s (ps1-client-play-timeout)`);
      return;
    }
    // Release after the poll phase: datagrams that arrived while the loop was busy are read
    // first, so a retransmission waiting in the socket is not given up for lost.
    setImmediate(() => this.releaseAndRepair(a, w));
  }

  private releaseAndRepair(a: Attempt, w: ReceiveWindow): void {
    if (this.attempt !== a) return;
    const now = this.now();
    const out = w.release(now);
    if (out.length) {
      const buf = out.length === 1 ? out[0]! : Buffer.concat(out);
      this.counters.bytes += buf.length;
      this.ctx.onData(buf, true);
    }
    const missing = w.nacks(now);
    if (missing.length) {
      const ranges = toRanges(missing);
      for (let i = 0; i < ranges.length; i += MAX_NACK_RANGES) {
        this.counters.nacks++;
        this.send(a, encodeNack(a.session, ranges.slice(i, i + MAX_NACK_RANGES)));
      }
    }
    if (now - a.lastAck >= PS1_ACK_MS) {
      a.lastAck = now;
      const c = w.counters;
      this.send(
        a,
        encodeAck(a.session, w.ackSeq, this.echoNow(), a.rtt.rttMs * 1000, c.lost, c.recovered),
      );
    }
  }

  /** End this attempt (BYE when a session exists and `bye`), then dial again after the backoff. */
  private fail(reason: string, bye = true): void {
    this.lastError = reason;
    this.endAttempt(bye ? Reason.closed : -1);
    if (this.closed) return;
    this.state = 'waiting';
    const d = this.backoff.schedule(() => this.dial());
    this.ctx.log.warn({ retryMs: d }, `ps1 input: ${reason}`);
  }

  private endAttempt(byeReason: number): void {
    const a = this.attempt;
    this.attempt = null;
    this.tick?.cancel();
    this.tick = null;
    if (!a) return;
    if (a.window) {
      for (const [k, v] of Object.entries(a.window.counters))
        this.past[k as keyof WindowCounters] += v;
    }
    this.lastRttMs = a.rtt.samples ? a.rtt.rttMs : this.lastRttMs;
    const close = () => {
      try {
        a.sock.close();
      } catch {
        // already closed
      }
    };
    if (a.session && byeReason >= 0) {
      a.sock.send(encodeBye(a.session, byeReason), this.port(), a.address, close);
    } else close();
  }

  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    this.backoff.cancel();
    this.endAttempt(Reason.closed);
    this.state = 'waiting';
  }

  fault(): string {
    return this.state === 'playing' && this.attempt?.gotData ? '' : this.lastError;
  }

  private totals(): WindowCounters {
    const t = { ...this.past };
    const w = this.attempt?.window;
    if (w) for (const [k, v] of Object.entries(w.counters)) t[k as keyof WindowCounters] += v;
    return t;
  }

  private rttMs(): number {
    const a = this.attempt;
    return a?.rtt.samples ? a.rtt.rttMs : this.lastRttMs;
  }

  metrics(): TransportMetrics {
    const t = this.totals();
    return {
      protocol: 'ps1',
      rttSeconds: this.rttMs() / 1000,
      packets: {
        received: t.received,
        lost: t.lost,
        recovered: t.recovered,
        retransmitted: t.retransmittedReceived,
        late: t.late,
        duplicates: t.duplicates,
        nacks: this.counters.nacks,
        nackedPackets: t.nackedPackets,
        checkDropped: this.counters.checkDropped,
        foreign: this.counters.foreign,
        junk: this.counters.junk,
      },
    };
  }

  status(): Record<string, unknown> {
    const a = this.attempt;
    const t = this.totals();
    return {
      state: this.state,
      server: `${str(this.cfg, 'address')}:${this.port()}`,
      ...(a?.session ? { session: a.session.toString(16).padStart(8, '0') } : {}),
      attempts: this.attempts,
      connects: this.connects,
      ...(a && this.localPort ? { localPort: this.localPort } : {}),
      rttMs: Math.round(this.rttMs() * 10) / 10,
      latencyMs: num(this.cfg, 'ps1-client-latency-ms', 3000),
      encrypted: this.passphrase !== null,
      ...(bool(this.cfg, 'peer-auth', false) ? { peerAuth: true } : {}),
      received: t.received,
      retransmittedReceived: t.retransmittedReceived,
      recovered: t.recovered,
      lost: t.lost,
      late: t.late,
      duplicates: t.duplicates,
      outOfWindow: t.outOfWindow,
      nackedPackets: t.nackedPackets,
      ...this.counters,
      ...(this.lastError ? { lastError: this.lastError } : {}),
    };
  }
}
