// `srt` input: libsrt in the native core (src/native/srt.ts) as a caller dialling `address`:`port`
// or a listener on `port` (on `bind-if`) admitting one caller, only from `address` when it is
// set and only with the expected stream id. A caller reconnects with backoff; every failure is
// reported in words (wrong passphrase, stream id refused, timed out …) by fault().
import { lookup } from 'node:dns/promises';
import { isIPv4 } from 'node:net';
import { bool, num, str } from '../../config/spec-values.ts';
import { PEER_AUTH_NO_DOMAIN, peerProof } from '../../engine/cluster.ts';
import type { InputContext, InputTransport } from '../../engine/input.ts';
import { type SrtEvent, SrtReceiver, type SrtReceiverOptions } from '../../native/srt.ts';
import { callerStreamId, keyLengthOf, peerAuthStreamId } from '../../protocols/srt/stream-id.ts';
import type { Timer } from '../../util/clock.ts';
import { Backoff } from '../common.ts';

/** A caller not connected this long after its time-out (srt-client-timeout-ms) is dialled
 *  again even if libsrt reported nothing (a watchdog; libsrt reports a failure itself). */
export const SRT_CONNECT_GRACE_MS = 2000;

/** Batches are handed to JS at most this long after their first message (as the udp input). */
export const SRT_BATCH_LATENCY_MS = 20;

export class SrtInput implements InputTransport {
  private rx: SrtReceiver | null = null;
  private readonly backoff: Backoff;
  private closed = false;
  private connected = false;
  private peer = '';
  private peerStreamId = '';
  private connects = 0;
  private bytes = 0;
  private lastError = '';
  private lastRejection = '';
  private readonly listen: boolean;
  private watchdog: Timer | null = null;

  constructor(
    private readonly cfg: Record<string, unknown>,
    private readonly ctx: InputContext,
  ) {
    this.backoff = new Backoff(ctx.clock);
    this.listen = bool(cfg, 'listen-mode', false);
  }

  start(): void {
    const port = num(this.cfg, 'port', 0);
    if (port < 1) throw new Error('srt input: port is not set');
    if (this.listen) {
      this.rx = new SrtReceiver(this.options(str(this.cfg, 'address')));
      return;
    }
    if (!str(this.cfg, 'address')) throw new Error('srt input: address is not set');
    this.dial();
  }

  /** The receiver options of this record; `address` resolved to IPv4. */
  private options(address: string): SrtReceiverOptions {
    const login = str(this.cfg, 'srt-client-login');
    const passphrase = str(this.cfg, 'passphrase');
    const bindIf = str(this.cfg, 'bind-if');
    return {
      mode: this.listen ? 'listener' : 'caller',
      port: num(this.cfg, 'port', 0),
      ...(address ? { address } : {}),
      ...(bindIf ? { bindIf } : {}),
      latencyMs: num(this.cfg, 'srt-client-latency-ms', 1000),
      lossMaxTtl: num(this.cfg, 'srt-client-reorder', 0),
      overheadPct: num(this.cfg, 'srt-client-overhead-pc', 25),
      maxBw: num(this.cfg, 'srt-client-maxbw-Bs', 0),
      connectTimeoutMs: num(this.cfg, 'srt-client-timeout-ms', 3000),
      ...(passphrase ? { passphrase, keyLength: keyLengthOf(num(this.cfg, 'aes-type', 0)) } : {}),
      tsbpd: !bool(this.cfg, 'disable-tsbpd', false),
      // Listening: the expected stream id is the login itself (the password is ignored).
      streamId: this.listen ? login : this.callerStreamId(login),
      batchLatencyMs: SRT_BATCH_LATENCY_MS,
      onData: (batch) => {
        this.bytes += batch.length;
        this.ctx.onData(batch, true); // the receiver's own block: rewritten in place, no copy
      },
      onEvent: (e) => this.onEvent(e),
      onError: (err) => {
        this.lastError = err.message;
        this.ctx.log.warn({ err }, 'srt input error');
      },
    };
  }

  /** What this input sends as a caller: derived from the cluster with peer-auth (which then
   *  replaces the login), else from srt-client-login / -password. Throws without a domain. */
  private callerStreamId(login: string): string {
    if (!bool(this.cfg, 'peer-auth', false)) {
      return callerStreamId(login, str(this.cfg, 'srt-client-password'));
    }
    const cluster = this.ctx.cluster?.();
    if (!cluster?.domain) throw new Error(PEER_AUTH_NO_DOMAIN);
    return peerAuthStreamId(cluster.nodeName, peerProof(cluster.domain));
  }

  private dial(): void {
    if (this.closed) return;
    const host = str(this.cfg, 'address');
    const open = (address: string): void => {
      if (this.closed) return;
      try {
        this.rx = new SrtReceiver(this.options(address));
      } catch (err) {
        this.retry((err as Error).message);
        return;
      }
      const timeout = num(this.cfg, 'srt-client-timeout-ms', 3000) || 3000;
      const rx = this.rx;
      this.watchdog = this.ctx.clock.setTimeout(() => {
        this.watchdog = null;
        if (this.rx === rx && !this.connected) {
          this.retry(`connection timed out after ${timeout} ms`);
        }
      }, timeout + SRT_CONNECT_GRACE_MS);
    };
    if (isIPv4(host)) open(host);
    else
      lookup(host, { family: 4 }).then(
        (r) => open(r.address),
        (err: Error) => this.retry(`cannot resolve ${host}: ${err.message}`),
      );
  }

  /** Caller: drop this attempt's receiver and dial again after the backoff. */
  private retry(reason: string): void {
    this.watchdog?.cancel();
    this.watchdog = null;
    this.lastError = reason;
    this.connected = false;
    const rx = this.rx;
    this.rx = null;
    if (rx) {
      const s = rx.stats();
      rx.close();
      this.lastStats = s;
    }
    if (this.closed) return;
    const d = this.backoff.schedule(() => this.dial());
    this.ctx.log.info({ retryMs: d, reason }, 'srt input reconnecting');
  }

  private lastStats: ReturnType<SrtReceiver['stats']> | undefined;

  private onEvent(e: SrtEvent): void {
    switch (e.type) {
      case 'connected':
        this.watchdog?.cancel();
        this.watchdog = null;
        this.connected = true;
        this.connects++;
        this.peer = e.peer;
        this.peerStreamId = e.streamId;
        this.lastError = '';
        this.backoff.reset();
        this.ctx.log.info({ peer: e.peer, streamId: e.streamId || undefined }, 'srt connected');
        if (this.connects > 1) this.ctx.onDiscontinuity?.('srt reconnected');
        break;
      case 'rejected':
        this.lastRejection = e.message;
        this.ctx.log.warn(e.message);
        break;
      case 'disconnected':
      case 'fault': {
        const reason = e.type === 'fault' ? `${e.message}` : e.message;
        this.connected = false;
        this.lastError = reason;
        this.ctx.log.warn({ code: e.type === 'fault' ? e.code : undefined }, `srt: ${reason}`);
        if (!this.listen) this.retry(reason);
        break;
      }
    }
  }

  async close(): Promise<void> {
    this.closed = true;
    this.backoff.cancel();
    this.watchdog?.cancel();
    this.watchdog = null;
    const rx = this.rx;
    this.rx = null;
    rx?.close();
  }

  fault(): string {
    if (this.connected) return '';
    if (this.listen) return this.lastError || this.lastRejection;
    return this.lastError;
  }

  status(): Record<string, unknown> {
    const stats = this.rx?.stats() ?? this.lastStats;
    return {
      mode: this.listen ? 'listener' : 'caller',
      connected: this.connected,
      connects: this.connects,
      bytes: this.bytes,
      ...(this.listen && this.rx ? { port: this.rx.port } : {}),
      ...(this.peer ? { peer: this.peer } : {}),
      ...(this.peerStreamId ? { streamId: this.peerStreamId } : {}),
      ...(stats ? { srt: stats } : {}),
      ...(this.lastError ? { lastError: this.lastError } : {}),
      ...(this.lastRejection ? { lastRejection: this.lastRejection } : {}),
      ...(bool(this.cfg, 'peer-auth', false) && this.listen
        ? {
            warning:
              'peer-auth applies when dialling (listen-mode false): this listener ignores it',
          }
        : {}),
    };
  }
}
