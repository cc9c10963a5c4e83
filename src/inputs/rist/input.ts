// `rist` input: a RIST receiver (librist in the native core), simple or main profile, listening
// on one or more peers (the rist-addr-* arrays), with recovery by retransmission, an optional
// pre-shared key (main profile) and allow-conn-ip. Recovered payload reaches the stream in
// batches; librist's flow statistics (lost, recovered, RTT, bandwidth, quality) are the status.
import { bool, int, str } from '../../config/spec-values.ts';
import type { InputContext, InputTransport, TransportMetrics } from '../../engine/input.ts';
import { type RistPeer, RistReceiver, type RistReceiverStats } from '../../native/rist.ts';
import { isMulticast } from '../../util/net.ts';

/** Recovery buffer: how long librist waits for a retransmission before it gives a packet up.
 *  The spec has no field for it; 1 s is librist's own default and covers rist-recovery-rtt-max
 *  (500 ms by default) twice. Raised to 3 × the RTT ceiling when that is larger. */
export const RIST_BUFFER_MS = 1000;
/** Batches reach the stream at most this long after their first block (as the udp input). */
export const RIST_BATCH_LATENCY_MS = 20;
/** A key failure this recent still names the passphrase as the fault: librist says so only when
 *  a sender's new NONCE arrives (every few seconds) and logs timeouts and malformed packets in
 *  between, which hid the cause. */
export const RIST_KEY_FAILURE_HOLD_MS = 15_000;
/** A peer's weight when rist-addr-weight is not given (librist's default). */
export const RIST_DEFAULT_WEIGHT = 5;

function list<T>(v: unknown, pick: (x: unknown) => x is T): T[] {
  return Array.isArray(v) ? v.filter(pick) : [];
}
const isStr = (x: unknown): x is string => typeof x === 'string';
const isInt = (x: unknown): x is number => Number.isInteger(x);

/** The record's peer arrays as peers (validation has checked that present arrays agree). */
export function ristPeers(cfg: Record<string, unknown>): RistPeer[] {
  const ports = list(cfg['rist-addr-port'], isInt);
  const addresses = list(cfg['rist-addr-address'], isStr);
  const intfs = list(cfg['rist-addr-intf'], isStr);
  const weights = list(cfg['rist-addr-weight'], isInt);
  return ports.map((port, i) => {
    const address = addresses[i] ?? '';
    const peer: RistPeer = { port, weight: weights[i] ?? RIST_DEFAULT_WEIGHT };
    // multicast: the group is the address (the interface is ignored, as the spec says);
    // unicast: the address is ignored and the interface is where to listen.
    if (isMulticast(address)) peer.address = address;
    else if (intfs[i]) peer.intf = intfs[i];
    return peer;
  });
}

export class RistInput implements InputTransport {
  private rx: RistReceiver | null = null;
  private lastError = '';
  private peers: RistPeer[] = [];

  constructor(
    private readonly cfg: Record<string, unknown>,
    private readonly ctx: InputContext,
  ) {}

  start(): void {
    this.peers = ristPeers(this.cfg);
    if (this.peers.length === 0) throw new Error('rist input: rist-addr-port names no peer');
    const profile = int(this.cfg, 'rist-profile', 1) === 0 ? 0 : 1;
    const rttMax = int(this.cfg, 'rist-recovery-rtt-max', 500);
    const passphrase = str(this.cfg, 'passphrase');
    if (passphrase && profile === 0) {
      this.ctx.log.warn('rist input: passphrase ignored (the simple profile has no encryption)');
    }
    this.rx = new RistReceiver({
      profile,
      peers: this.peers,
      allowIp: str(this.cfg, 'allow-conn-ip'),
      sessionTimeoutMs: int(this.cfg, 'rist-session-timeout', 2000),
      rttMinMs: int(this.cfg, 'rist-recovery-rtt-min', 50),
      rttMaxMs: rttMax,
      bufferMs: Math.max(RIST_BUFFER_MS, 3 * rttMax),
      ...(passphrase && profile === 1 ? { secret: passphrase } : {}),
      trace: bool(this.cfg, 'trace', false),
      batchLatencyMs: RIST_BATCH_LATENCY_MS,
      onData: (batch) => this.ctx.onData(batch, true), // the receiver's own block
      onError: (err) => {
        this.lastError = err.message;
        this.ctx.log.warn({ err }, 'rist input error');
      },
    });
  }

  async close(): Promise<void> {
    const rx = this.rx;
    this.rx = null;
    rx?.close();
  }

  private where(): string {
    return this.peers.map((p) => `${p.address || p.intf || '*'}:${p.port}`).join(', ');
  }

  fault(): string {
    if (!this.rx) return this.lastError;
    const s = this.rx.stats();
    if (s.peersConnected > 0) return '';
    const keyFailure = this.keyFailure(s);
    if (keyFailure) return keyFailure;
    if (s.rejected > 0) {
      return `refused a sender at ${s.lastRejectedIp} (allow-conn-ip ${str(this.cfg, 'allow-conn-ip')})`;
    }
    if (s.timeouts > 0) {
      return `the sender went silent (no RIST traffic for ${int(this.cfg, 'rist-session-timeout', 2000)} ms)`;
    }
    // A listener nobody has called yet is waiting, not faulty; after a sender came and went,
    // or librist complained (a port in use), that is the message.
    if (s.lastLog) return `librist: ${s.lastLog}`;
    if (s.connects > 0) return `no RIST sender connected (listening on ${this.where()})`;
    return '';
  }

  /** A sender whose packets do not decrypt, in words: the passphrases differ, or this input has
   *  none (the simple profile has no encryption at all). */
  private keyFailure(s: RistReceiverStats): string {
    if (s.keyFailureAgoMs < 0 || s.keyFailureAgoMs > RIST_KEY_FAILURE_HOLD_MS) return '';
    const where = `listening on ${this.where()}`;
    const librist = `librist: ${s.lastKeyFailure}`;
    if (!str(this.cfg, 'passphrase')) {
      return `a sender encrypts and this input has no passphrase: set passphrase (rist-profile 1) to the sender's (${where}; ${librist})`;
    }
    return `the sender's passphrase does not match this input's passphrase: set the same one on both ends (${where}; ${librist})`;
  }

  metrics(): TransportMetrics {
    const s: Partial<RistReceiverStats> = this.rx?.stats() ?? {};
    return {
      protocol: 'rist',
      rttSeconds: (s.rtt ?? 0) / 1000,
      packets: {
        received: s.received ?? 0,
        missing: s.missing ?? 0,
        recovered: s.recovered ?? 0,
        lost: s.lost ?? 0,
        reordered: s.reordered ?? 0,
      },
    };
  }

  status(): Record<string, unknown> {
    const s: Partial<RistReceiverStats> = this.rx?.stats() ?? {};
    return {
      profile: int(this.cfg, 'rist-profile', 1) === 0 ? 'simple' : 'main',
      listening: this.where(),
      encrypted: !!str(this.cfg, 'passphrase') && int(this.cfg, 'rist-profile', 1) === 1,
      peersConnected: s.peersConnected ?? 0,
      bytes: s.bytes ?? 0,
      packets: s.blocks ?? 0,
      received: s.received ?? 0,
      missing: s.missing ?? 0,
      recovered: s.recovered ?? 0,
      recoveredFirstRetry: s.recoveredOneRetry ?? 0,
      lost: s.lost ?? 0,
      reordered: s.reordered ?? 0,
      rttMs: s.rtt ?? 0,
      bandwidthBps: s.bandwidth ?? 0,
      retryBandwidthBps: s.retryBandwidth ?? 0,
      quality: s.quality ?? 100,
      discontinuities: s.discontinuities ?? 0,
      rejected: s.rejected ?? 0,
      timeouts: s.timeouts ?? 0,
      queueDrops: s.queueDrops ?? 0,
      queued: s.queued ?? 0,
      ...(s.lastLog ? { lastLog: s.lastLog } : {}),
      ...(this.lastError ? { lastError: this.lastError } : {}),
    };
  }
}
