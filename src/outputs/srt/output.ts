// `srt` output: the stream's TS to SRT peers (src/native/srt.ts SrtSender) — a caller dialling
// `address`:`port` (dialled again with backoff when the connection fails or ends), or a
// listener on `port` (on `bind-if`) serving up to `max-callers` callers at once, each with its
// own libsrt statistics, admitting only `address` when set and only the expected stream id
// (`srt-client-login`) or, with peer-auth, the cluster's peers. The same stream id and security
// fields as the srt input (docs/transports.md, "SRT output").
import { lookup } from 'node:dns/promises';
import { isIPv4 } from 'node:net';
import { bool, num, str } from '../../config/spec-values.ts';
import { PEER_AUTH_NO_DOMAIN, peerProof } from '../../engine/cluster.ts';
import type { TransportMetrics } from '../../engine/input.ts';
import type { OutputContext, StreamOutput } from '../../engine/output.ts';
import { SrtSender, type SrtSenderOptions } from '../../native/srt.ts';
import { callerStreamId, keyLengthOf, peerAuthStreamId } from '../../protocols/srt/stream-id.ts';
import type { Timer } from '../../util/clock.ts';

/** How often connections are accepted and checked. */
export const SRT_OUTPUT_POLL_MS = 100;
const BACKOFF_MIN_MS = 500;
const BACKOFF_MAX_MS = 10_000;

export class SrtOutput implements StreamOutput {
  private tx: SrtSender | null = null;
  private poller: Timer | null = null;
  private retryTimer: Timer | null = null;
  private delay = BACKOFF_MIN_MS;
  private closed = false;
  private connects = 0;
  private lastError = '';
  private lastRejection = '';
  private readonly listen: boolean;

  constructor(
    private readonly cfg: Record<string, unknown>,
    private readonly ctx: OutputContext,
  ) {
    this.listen = bool(cfg, 'listen-mode', false);
  }

  async start(): Promise<void> {
    const port = num(this.cfg, 'port', 0);
    if (port < 1) throw new Error('srt output: port is not set');
    const host = str(this.cfg, 'address');
    if (this.listen) {
      // Listening, `address` is the only caller admitted (as the input's).
      if (host && !isIPv4(host)) {
        throw new Error(`srt output: address ${host} must be an IPv4 address when listening`);
      }
      this.tx = new SrtSender(this.options(host));
    } else {
      if (!host) throw new Error('srt output: address is not set');
      await this.dial();
    }
    this.poller = this.ctx.clock.setInterval(() => this.poll(), SRT_OUTPUT_POLL_MS);
  }

  /** The cluster's proof (peer-auth); throws when the server has no cluster domain. */
  private proof(): string {
    const cluster = this.ctx.cluster?.();
    if (!cluster?.domain) throw new Error(`srt output: ${PEER_AUTH_NO_DOMAIN}`);
    return peerProof(cluster.domain);
  }

  private options(address: string): SrtSenderOptions {
    const passphrase = str(this.cfg, 'passphrase');
    const bindIf = str(this.cfg, 'bind-if');
    const login = str(this.cfg, 'srt-client-login');
    const peerAuth = bool(this.cfg, 'peer-auth', false);
    let streamId: string;
    if (this.listen) streamId = login;
    else if (peerAuth) {
      const cluster = this.ctx.cluster?.();
      streamId = peerAuthStreamId(cluster?.nodeName ?? '', this.proof());
    } else streamId = callerStreamId(login, str(this.cfg, 'srt-client-password'));
    return {
      mode: this.listen ? 'listener' : 'caller',
      port: num(this.cfg, 'port', 0),
      ...(address ? { address } : {}),
      ...(bindIf ? { bindIf } : {}),
      latencyMs: num(this.cfg, 'srt-latency-ms', 120),
      overheadPct: num(this.cfg, 'srt-client-overhead-pc', 25),
      maxBw: num(this.cfg, 'srt-client-maxbw-Bs', -1),
      connectTimeoutMs: num(this.cfg, 'srt-client-timeout-ms', 3000),
      ...(passphrase ? { passphrase, keyLength: keyLengthOf(num(this.cfg, 'aes-type', 0)) } : {}),
      streamId,
      ...(this.listen && peerAuth ? { peerProof: this.proof() } : {}),
      maxCallers: num(this.cfg, 'max-callers', 16),
    };
  }

  private async dial(): Promise<void> {
    if (this.closed) return;
    const host = str(this.cfg, 'address');
    try {
      const address = isIPv4(host) ? host : (await lookup(host, { family: 4 })).address;
      if (this.closed) return;
      this.tx = new SrtSender(this.options(address));
    } catch (err) {
      this.retry((err as Error).message);
    }
  }

  private retry(reason: string): void {
    this.lastError = reason;
    this.tx?.close();
    this.tx = null;
    if (this.closed) return;
    const d = this.delay;
    this.delay = Math.min(this.delay * 2, BACKOFF_MAX_MS);
    this.retryTimer = this.ctx.clock.setTimeout(() => {
      this.retryTimer = null;
      void this.dial();
    }, d);
    this.ctx.log.info({ retryMs: d, reason }, 'srt output reconnecting');
  }

  private poll(): void {
    const tx = this.tx;
    if (!tx) return;
    for (const e of tx.poll()) {
      if (e.type === 'connected') {
        this.connects++;
        this.delay = BACKOFF_MIN_MS;
        if (!this.listen) this.lastError = '';
        this.ctx.log.info({ peer: e.peer }, 'srt output connected');
      } else if (e.type === 'rejected') {
        this.lastRejection = e.message ?? `caller ${e.peer} refused`;
        this.ctx.log.warn(this.lastRejection);
      } else {
        const reason = e.message ?? e.type;
        this.ctx.log.warn({ peer: e.peer, code: e.code }, `srt output: ${reason}`);
        if (this.listen) this.lastError = `${e.peer}: ${reason}`;
        else this.retry(reason);
      }
    }
  }

  packets(buf: Buffer): void {
    this.tx?.send(buf); // sent (copied into libsrt's buffers) during the call
  }

  async close(): Promise<void> {
    this.closed = true;
    this.poller?.cancel();
    this.poller = null;
    this.retryTimer?.cancel();
    this.retryTimer = null;
    this.tx?.close();
    this.tx = null;
  }

  metrics(): TransportMetrics {
    const st = this.tx?.stats();
    // The slowest connected peer's RTT: the one a latency setting has to cover.
    const rtt = Math.max(0, ...(st?.peers ?? []).map((p) => Number(p['rttMs'] ?? 0)));
    return {
      protocol: 'srt',
      rttSeconds: rtt / 1000,
      packets: { ...(st?.totals ?? { sent: 0, lost: 0, retransmitted: 0, dropped: 0 }) },
    };
  }

  status(): Record<string, unknown> {
    const st = this.tx?.stats();
    return {
      mode: this.listen ? 'listener' : 'caller',
      connects: this.connects,
      ...(this.listen && this.tx ? { port: this.tx.port } : {}),
      ...(st ? { messages: st.messages, bytes: st.bytes, peers: st.peers } : {}),
      ...(st && this.listen ? { refused: st.refused } : {}),
      ...(this.lastError ? { lastError: this.lastError } : {}),
      ...(this.lastRejection ? { lastRejection: this.lastRejection } : {}),
    };
  }
}
