// RistReceiver: the typed façade over the native RIST receiver (librist, simple or main profile).
// librist's threads receive, reorder and recover; a reader thread of the addon batches the
// recovered payload and hands it to JS as the UDP receiver does — bounded queue, one signal per
// burst, drain slices of a few ms with a turn of the event loop between them (the pump below),
// the newest batches shed and counted (queueDrops) when JS falls behind.
import { isIPv4 } from 'node:net';
import { isMulticast } from '../util/net.ts';
import { addon, type NativeRistReceiver, type NativeRistSender } from './addon.ts';
import { argError, fromNative, NativeError } from './errors.ts';
import { resolveInterface } from './udp.ts';

/** librist keeps at most 127 bytes of a pre-shared secret (RIST_MAX_STRING_SHORT − 1). */
export const RIST_MAX_SECRET_BYTES = 127;
export const DEFAULT_RIST_BATCH_BLOCKS = 64;
export const DEFAULT_RIST_BATCH_LATENCY_MS = 20;
export const DEFAULT_RIST_QUEUE_BATCHES = 256;

export interface RistPeer {
  /** Multicast group to listen on; for unicast leave it out and give `intf`. */
  address?: string;
  port: number;
  /** Unicast: local interface name or IPv4 address to bind ('' = every address). */
  intf?: string;
  /** Load-balancing weight; 0 = the sender duplicates to every peer. */
  weight?: number;
}

export interface RistReceiverOptions {
  /** 0 simple (RTP over UDP, an even port and the next one), 1 main (GRE tunnelled, one port). */
  profile: 0 | 1;
  peers: RistPeer[];
  /** Accept only this remote IPv4 address ('' = any). */
  allowIp?: string;
  sessionTimeoutMs?: number;
  rttMinMs?: number;
  rttMaxMs?: number;
  /** Recovery buffer (ms): how long a lost packet may take to be recovered. */
  bufferMs?: number;
  /** Pre-shared key (main profile); bytes beyond 127 are dropped. */
  secret?: string;
  /** AES key size for `secret`: 128 or 256. */
  keySize?: 128 | 256;
  /** librist's log lines at debug level (else warnings and errors only). */
  trace?: boolean;
  batchBlocks?: number;
  batchLatencyMs?: number;
  queueBatches?: number;
  statsIntervalMs?: number;
  /** A batch of recovered payloads concatenated (`lengths[i]` each); views valid during the call. */
  onData: (batch: Buffer, blocks: number, lengths: Int32Array) => void;
  /** Exceptions thrown by onData. */
  onError?: (err: Error) => void;
}

export interface RistReceiverStats {
  /** Payload blocks (RTP packets) and bytes handed on. */
  blocks: number;
  bytes: number;
  batches: number;
  /** Batches shed because JS did not keep up, and batches waiting now. */
  queueDrops: number;
  queued: number;
  /** Blocks librist flagged as following a gap it could not fill. */
  discontinuities: number;
  /** Connections refused by allow-conn-ip, accepted, and peers timed out. */
  rejected: number;
  connects: number;
  timeouts: number;
  peersConnected: number;
  /** librist flow statistics: reports received; the last interval's bandwidth (bit/s),
   *  retransmission bandwidth, quality (%), RTT (ms). */
  statsReports: number;
  bandwidth: number;
  retryBandwidth: number;
  quality: number;
  rtt: number;
  /** Sums over the receiver's life: packets received, missing (gaps seen), reordered, recovered
   *  by retransmission (and of them on the first request), lost for good. */
  received: number;
  missing: number;
  reordered: number;
  recovered: number;
  recoveredOneRetry: number;
  lost: number;
  /** The same counters for the last stats interval only. */
  lastReceived: number;
  lastLost: number;
  lastMissing: number;
  lastRecovered: number;
  /** librist log lines at error level, and the last warning or error it logged. */
  errors: number;
  lastLog: string;
  /** librist's lines about a key that does not fit (a wrong passphrase), kept apart from
   *  lastLog: how many, how long ago the last one was (ms, -1: none) and its text. */
  keyFailures: number;
  keyFailureAgoMs: number;
  lastKeyFailure: string;
  lastRejectedIp: string;
}

function intIn(name: string, v: unknown, def: number, min: number, max: number): number {
  if (v === undefined) return def;
  if (!Number.isInteger(v) || (v as number) < min || (v as number) > max) {
    throw argError(`${name} must be an integer in [${min}, ${max}], got ${String(v)}`);
  }
  return v as number;
}

/** Cut a secret to librist's 127 bytes without splitting a UTF-8 sequence. */
export function ristSecret(secret: string): string {
  const bytes = Buffer.from(secret, 'utf8');
  if (bytes.length <= RIST_MAX_SECRET_BYTES) return secret;
  let end = RIST_MAX_SECRET_BYTES;
  while (end > 0 && (bytes[end]! & 0xc0) === 0x80) end--; // not inside a character
  return bytes.subarray(0, end).toString('utf8');
}

/** The librist listening URL of one peer. */
export function ristPeerUrl(p: RistPeer): string {
  if (p.address && isMulticast(p.address)) return `rist://@${p.address}:${p.port}`;
  const bind = p.intf ? resolveInterface(p.intf) : '0.0.0.0';
  return `rist://@${bind}:${p.port}`;
}

export class RistReceiver {
  private native: NativeRistReceiver | undefined;
  private lastStats: RistReceiverStats | undefined;

  constructor(opts: RistReceiverOptions) {
    if (opts === null || typeof opts !== 'object') throw argError('options must be an object');
    if (opts.profile !== 0 && opts.profile !== 1) throw argError('profile must be 0 or 1');
    if (typeof opts.onData !== 'function') throw argError('onData must be a function');
    if (!Array.isArray(opts.peers) || opts.peers.length === 0) {
      throw argError('peers must be a non-empty array');
    }
    const peers = opts.peers.map((p, i) => {
      const port = intIn(`peers[${i}].port`, p.port, -1, 1, 65535);
      if (port < 0) throw argError(`peers[${i}].port is required`);
      if (opts.profile === 0 && port % 2 !== 0) {
        throw argError(`peers[${i}].port: the simple profile needs an even port, got ${port}`);
      }
      if (p.address !== undefined && p.address !== '' && !isIPv4(p.address)) {
        throw argError(`peers[${i}].address must be an IPv4 address, got ${p.address}`);
      }
      const mcast = !!p.address && isMulticast(p.address);
      return {
        url: ristPeerUrl({ ...p, port }),
        weight: intIn(`peers[${i}].weight`, p.weight, 5, 0, 1 << 30),
        // unicast ports are checked free first (librist binds with SO_REUSEADDR and would share)
        probeHost: mcast ? '' : p.intf ? resolveInterface(p.intf) : '0.0.0.0',
        port,
      };
    });
    const allowIp = opts.allowIp ?? '';
    if (allowIp !== '' && !isIPv4(allowIp)) throw argError(`allowIp must be IPv4, got ${allowIp}`);
    const secret = ristSecret(opts.secret ?? '');
    const keySize = opts.keySize ?? 128;
    if (keySize !== 128 && keySize !== 256) throw argError('keySize must be 128 or 256');
    const onData = opts.onData;
    const onError = opts.onError;
    let native: NativeRistReceiver | undefined;
    const drain = () => native?.drain();
    try {
      native = new (addon().RistReceiver)(
        {
          profile: opts.profile,
          peers,
          allowIp,
          sessionTimeoutMs: intIn('sessionTimeoutMs', opts.sessionTimeoutMs, 2000, 100, 3_600_000),
          rttMinMs: intIn('rttMinMs', opts.rttMinMs, 50, 1, 60_000),
          rttMaxMs: intIn('rttMaxMs', opts.rttMaxMs, 500, 1, 60_000),
          bufferMs: intIn('bufferMs', opts.bufferMs, 1000, 10, 60_000),
          secret,
          keySize,
          logLevel: opts.trace ? 7 : 4,
          batchBlocks: intIn('batchBlocks', opts.batchBlocks, DEFAULT_RIST_BATCH_BLOCKS, 1, 1024),
          batchLatencyMs: intIn(
            'batchLatencyMs',
            opts.batchLatencyMs,
            DEFAULT_RIST_BATCH_LATENCY_MS,
            1,
            1000,
          ),
          queueBatches: intIn(
            'queueBatches',
            opts.queueBatches,
            DEFAULT_RIST_QUEUE_BATCHES,
            1,
            65536,
          ),
          statsIntervalMs: intIn('statsIntervalMs', opts.statsIntervalMs, 1000, 50, 60_000),
          pump: () => setImmediate(drain),
        },
        (block, n, len) => {
          // An exception must not escape into the addon (N-API would swallow it).
          try {
            onData(Buffer.from(block, 0, len), n, new Int32Array(block, (len + 3) & ~3, n));
          } catch (err) {
            if (onError) onError(err as Error);
            else
              process.nextTick(() => {
                throw err;
              });
          }
        },
      );
    } catch (err) {
      throw fromNative(err);
    }
    this.native = native;
  }

  stats(): RistReceiverStats {
    return this.native
      ? (this.native.stats() as RistReceiverStats)
      : (this.lastStats ?? ({} as RistReceiverStats));
  }

  get closed(): boolean {
    return this.native === undefined;
  }

  /** Stop librist and the reader thread, free the ports. Idempotent; no onData follows it. */
  close(): void {
    if (!this.native) return;
    this.lastStats = this.native.stats() as RistReceiverStats;
    this.native.close();
    this.native = undefined;
  }
}

/** A receiver a sender calls. */
export interface RistSendPeer {
  /** Host name or IPv4 address. */
  address: string;
  /** Even in the simple profile (the next port carries RTCP). */
  port: number;
  /** 0 (default): every packet goes to this peer as well; > 0: packets shared between the
   *  weighted peers in proportion. */
  weight?: number;
}

export interface RistSenderOptions {
  profile: 0 | 1;
  /** The receivers to call (one or more: paths to one receiver, or several receivers). */
  peers: RistSendPeer[];
  /** Pre-shared key (main profile); bytes beyond 127 are dropped. */
  secret?: string;
  keySize?: 128 | 256;
  /** Retransmission buffer (ms) kept for the receiver's requests. */
  bufferMs?: number;
  rttMinMs?: number;
  rttMaxMs?: number;
  trace?: boolean;
  statsIntervalMs?: number;
}

export interface RistSenderStats {
  /** Payloads (7 TS packets each) and bytes handed to librist, and writes it refused. */
  blocks: number;
  bytes: number;
  writeErrors: number;
  /** Peers configured, and how many of their receivers answer now. */
  peers: number;
  connected: number;
  timeouts: number;
  /** librist's peer reports: bit/s sent, of which retransmissions (summed over the peers);
   *  quality (%, the worst peer's); RTT (ms, the slowest peer's). */
  bandwidth: number;
  retryBandwidth: number;
  quality: number;
  rtt: number;
  /** Sums of librist's per-interval counters: packets sent, received (RTCP), retransmitted. */
  sent: number;
  received: number;
  retransmitted: number;
  errors: number;
  lastLog: string;
}

/** A RIST sender (librist) calling its receivers; write() takes whole batches of TS packets. */
export class RistSender {
  private native: NativeRistSender | undefined;
  private lastStats: RistSenderStats | undefined;

  constructor(opts: RistSenderOptions) {
    if (opts === null || typeof opts !== 'object') throw argError('options must be an object');
    if (opts.profile !== 0 && opts.profile !== 1) throw argError('profile must be 0 or 1');
    if (!Array.isArray(opts.peers) || opts.peers.length === 0 || opts.peers.length > 32) {
      throw argError('peers must be an array of 1 to 32 receivers');
    }
    const urls: string[] = [];
    const weights: number[] = [];
    opts.peers.forEach((p, i) => {
      const address = p?.address;
      if (typeof address !== 'string' || address === '' || /[/?@\s,]/.test(address)) {
        throw argError(
          `peers[${i}].address must be a host name or IPv4 address, got ${String(address)}`,
        );
      }
      const port = intIn(`peers[${i}].port`, p.port, -1, 1, 65535);
      if (port < 0) throw argError(`peers[${i}].port is required`);
      if (opts.profile === 0 && port % 2 !== 0) {
        throw argError(`peers[${i}].port: the simple profile needs an even port, got ${port}`);
      }
      urls.push(`rist://${address}:${port}`);
      weights.push(intIn(`peers[${i}].weight`, p.weight, 0, 0, 1_000_000));
    });
    const keySize = opts.keySize ?? 128;
    if (keySize !== 128 && keySize !== 256) throw argError('keySize must be 128 or 256');
    try {
      this.native = new (addon().RistSender)({
        profile: opts.profile,
        urls,
        weights,
        secret: ristSecret(opts.secret ?? ''),
        keySize,
        logLevel: opts.trace ? 7 : 4,
        bufferMs: intIn('bufferMs', opts.bufferMs, 1000, 10, 60_000),
        rttMinMs: intIn('rttMinMs', opts.rttMinMs, 50, 1, 60_000),
        rttMaxMs: intIn('rttMaxMs', opts.rttMaxMs, 500, 1, 60_000),
        statsIntervalMs: intIn('statsIntervalMs', opts.statsIntervalMs, 1000, 50, 60_000),
      });
    } catch (err) {
      throw fromNative(err);
    }
  }

  /** TS packets (any number); librist copies them, the buffer may be reused after the call. */
  write(buf: Buffer): void {
    if (!this.native) throw new NativeError('ERR_NATIVE_CLOSED', 'sender is closed');
    this.native.write(buf);
  }

  stats(): RistSenderStats {
    return this.native
      ? (this.native.stats() as RistSenderStats)
      : (this.lastStats ?? ({} as RistSenderStats));
  }

  get closed(): boolean {
    return this.native === undefined;
  }

  /** Stop librist (joins its threads). Idempotent. */
  close(): void {
    if (!this.native) return;
    this.lastStats = this.native.stats() as RistSenderStats;
    this.native.close();
    this.native = undefined;
  }
}
