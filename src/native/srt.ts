// SrtReceiver: the typed façade over the native SRT receiver — a caller dialling address:port or
// a listener on port admitting one caller at a time (optionally only from `address`, only with
// the expected stream id), read by the one shared SRT receive thread. SRT messages (one 1316-byte
// datagram of TS each) are concatenated into batches handed to JS in drain slices, as the UDP
// receiver does (src/native/udp.ts): never a JS call per packet, overload shed at this
// receiver's own queue (queueDrops). Connection events (connected, disconnected, a caller
// refused, a fault such as a wrong passphrase) arrive through onEvent.
import { isIPv4 } from 'node:net';
import {
  addon,
  type NativeSrtReceiver,
  type NativeSrtSender,
  type RawSrtSenderEvent,
  type RawSrtSocketOptions,
} from './addon.ts';
import { argError, fromNative } from './errors.ts';
import { resolveInterface } from './udp.ts';

/** SRT messages per batch handed to JS … */
export const DEFAULT_SRT_BATCH_MESSAGES = 64;
/** … or this long after the first of a batch arrived. */
export const DEFAULT_SRT_BATCH_LATENCY_MS = 5;
/** Batches waiting for JS before new ones are shed (queueDrops). */
export const DEFAULT_SRT_QUEUE_BATCHES = 256;
/** Passphrase length libsrt accepts (bytes). */
export const SRT_PASSPHRASE_MIN = 10;
export const SRT_PASSPHRASE_MAX = 79;
/** The longest stream id libsrt carries (bytes). */
export const SRT_STREAM_ID_MAX = 512;

function pump(): void {
  setImmediate(drainSlice);
}

function drainSlice(): void {
  addon().srtDrain();
}

export type SrtEvent =
  | { type: 'connected'; peer: string; streamId: string }
  | { type: 'disconnected'; message: string }
  | { type: 'fault'; code: string; message: string }
  | { type: 'rejected'; message: string };

/** What a receiver and a sender have in common: the socket and its security. */
export interface SrtSocketOptions {
  /** 'caller' dials address:port; 'listener' binds port (on bindIf) and waits. */
  mode: 'caller' | 'listener';
  /** Caller: the listener's IPv4 address. Listener: the only caller address admitted (optional). */
  address?: string;
  /** Caller: the listener's port; listener: the port to bind, 0 for any free one (see `port`). */
  port: number;
  /** Local interface name or IPv4 address to bind. */
  bindIf?: string;
  /** SRTO_LATENCY, ms (default 120). */
  latencyMs?: number;
  /** SRTO_LOSSMAXTTL: packets of reordering tolerated before a loss is reported (default 0). */
  lossMaxTtl?: number;
  /** SRTO_OHEADBW, percent (5..100, default 25). */
  overheadPct?: number;
  /** SRTO_MAXBW, bytes/s: -1 unlimited, 0 automatic (default), > 0 ceiling. */
  maxBw?: number;
  /** SRTO_CONNTIMEO, ms (default 3000; 0 keeps libsrt's). */
  connectTimeoutMs?: number;
  /** SRTO_PASSPHRASE: '' for none, else 10..79 bytes. */
  passphrase?: string;
  /** SRTO_PBKEYLEN: 16 (AES-128, default), 24 or 32. */
  keyLength?: 16 | 24 | 32;
  /** Timestamp-based packet delivery (default true). */
  tsbpd?: boolean;
  /** Caller: the stream id sent. Listener: the stream id a caller must present ('' = any). */
  streamId?: string;
  /** Listener: a caller whose Access Control stream id carries `s=<peerProof>` is admitted
   *  too (cluster peer-auth, src/engine/cluster.ts); '' = none. */
  peerProof?: string;
}

export interface SrtReceiverOptions extends SrtSocketOptions {
  batchMessages?: number;
  batchLatencyMs?: number;
  queueBatches?: number;
  /** A batch of `messages` SRT messages concatenated; views valid until onData returns. */
  onData: (batch: Buffer, messages: number, lengths: Int32Array) => void;
  onEvent?: (event: SrtEvent) => void;
  /** Exceptions thrown by onData / onEvent. */
  onError?: (err: Error) => void;
}

export interface SrtReceiverStats {
  connected: boolean;
  messages: number;
  bytes: number;
  batches: number;
  queueDrops: number;
  queued: number;
  /** Listener: callers accepted, and refused (address, stream id, busy). */
  accepted: number;
  rejected: number;
  /** From libsrt (srt_bstats) of the current or last connection, when there was one. */
  rttMs?: number;
  recvRateMbps?: number;
  bandwidthMbps?: number;
  packetsReceived?: number;
  packetsLost?: number;
  packetsRetransmitted?: number;
  packetsDropped?: number;
  packetsBelated?: number;
  packetsUndecrypted?: number;
  bufferMs?: number;
  bufferAvailableBytes?: number;
  latencyMs?: number;
}

function intIn(name: string, v: unknown, def: number, min: number, max: number): number {
  if (v === undefined) return def;
  if (!Number.isInteger(v) || (v as number) < min || (v as number) > max) {
    throw argError(`${name} must be an integer in [${min}, ${max}], got ${String(v)}`);
  }
  return v as number;
}

/** The socket part of a receiver's or sender's options, checked, as the addon reads it. */
function socketOptions(opts: SrtSocketOptions): RawSrtSocketOptions {
  if (opts === null || typeof opts !== 'object') throw argError('options must be an object');
  if (opts.mode !== 'caller' && opts.mode !== 'listener') {
    throw argError(`mode must be 'caller' or 'listener', got ${String(opts.mode)}`);
  }
  const listen = opts.mode === 'listener';
  const port = intIn('port', opts.port, -1, listen ? 0 : 1, 65535);
  if (port < 0) throw argError('port is required');
  const address = opts.address ?? '';
  if (address !== '' && !isIPv4(address)) {
    throw argError(`address must be an IPv4 address, got ${address}`);
  }
  if (!listen && address === '') throw argError('a caller needs an address');
  if (opts.bindIf !== undefined && (typeof opts.bindIf !== 'string' || opts.bindIf === '')) {
    throw argError('bindIf must be an interface name or IPv4 address');
  }
  const passphrase = opts.passphrase ?? '';
  if (typeof passphrase !== 'string') throw argError('passphrase must be a string');
  const passLen = Buffer.byteLength(passphrase);
  if (passLen !== 0 && (passLen < SRT_PASSPHRASE_MIN || passLen > SRT_PASSPHRASE_MAX)) {
    throw argError(
      `passphrase must be ${SRT_PASSPHRASE_MIN} to ${SRT_PASSPHRASE_MAX} bytes, got ${passLen}`,
    );
  }
  const keyLength = opts.keyLength ?? 16;
  if (keyLength !== 16 && keyLength !== 24 && keyLength !== 32) {
    throw argError(`keyLength must be 16, 24 or 32, got ${String(keyLength)}`);
  }
  const streamId = opts.streamId ?? '';
  if (typeof streamId !== 'string' || Buffer.byteLength(streamId) > SRT_STREAM_ID_MAX) {
    throw argError(`streamId must be a string of at most ${SRT_STREAM_ID_MAX} bytes`);
  }
  if (opts.tsbpd !== undefined && typeof opts.tsbpd !== 'boolean') {
    throw argError('tsbpd must be a boolean');
  }
  const peerProof = opts.peerProof ?? '';
  if (typeof peerProof !== 'string' || /[,=]/.test(peerProof)) {
    throw argError('peerProof must be a string without "," or "="');
  }
  return {
    listen,
    address,
    port,
    bindIf: opts.bindIf === undefined ? '' : resolveInterface(opts.bindIf),
    latencyMs: intIn('latencyMs', opts.latencyMs, 120, 0, 60_000),
    lossMaxTtl: intIn('lossMaxTtl', opts.lossMaxTtl, 0, 0, 10_000),
    overheadPct: intIn('overheadPct', opts.overheadPct, 25, 5, 100),
    maxBw: intIn('maxBw', opts.maxBw, 0, -1, Number.MAX_SAFE_INTEGER),
    connectTimeoutMs: intIn('connectTimeoutMs', opts.connectTimeoutMs, 3000, 0, 600_000),
    passphrase,
    pbkeylen: keyLength,
    tsbpd: opts.tsbpd ?? true,
    streamId,
    peerProof,
  };
}

export class SrtReceiver {
  private native: NativeSrtReceiver | undefined;
  /** The bound port (listener; useful with port 0), 0 for a caller. */
  readonly port: number;
  private lastStats: SrtReceiverStats | undefined;

  constructor(opts: SrtReceiverOptions) {
    if (opts === null || typeof opts !== 'object') throw argError('options must be an object');
    if (typeof opts.onData !== 'function') throw argError('onData must be a function');
    for (const k of ['onEvent', 'onError'] as const) {
      if (opts[k] !== undefined && typeof opts[k] !== 'function') {
        throw argError(`${k} must be a function`);
      }
    }
    const raw = {
      ...socketOptions(opts),
      batchMessages: intIn(
        'batchMessages',
        opts.batchMessages,
        DEFAULT_SRT_BATCH_MESSAGES,
        1,
        1024,
      ),
      batchLatencyMs: intIn(
        'batchLatencyMs',
        opts.batchLatencyMs,
        DEFAULT_SRT_BATCH_LATENCY_MS,
        0,
        1000,
      ),
      queueBatches: intIn('queueBatches', opts.queueBatches, DEFAULT_SRT_QUEUE_BATCHES, 1, 65536),
      pump,
    };
    const { onData, onEvent, onError } = opts;
    try {
      this.native = new (addon().SrtReceiver)(raw, (kind, a, b, c, d) => {
        // An exception must not escape into the addon's callback: to onError, or uncaught.
        try {
          if (kind === 0) {
            const block = a as ArrayBuffer;
            const n = b as number;
            const len = c as number;
            onData(Buffer.from(block, 0, len), n, new Int32Array(block, (len + 3) & ~3, n));
          } else onEvent?.(toEvent(kind, String(a), String(b), String(c), d ?? ''));
        } catch (err) {
          if (onError) onError(err as Error);
          else
            process.nextTick(() => {
              throw err;
            });
        }
      });
    } catch (err) {
      throw fromNative(err);
    }
    this.port = this.native.port;
  }

  stats(): SrtReceiverStats {
    if (!this.native) return this.lastStats ?? zeroStats();
    return this.native.stats() as unknown as SrtReceiverStats;
  }

  get closed(): boolean {
    return this.native === undefined;
  }

  /** Close the sockets (a listener's port is free when this returns). Idempotent; no callback
   *  follows it. */
  close(): void {
    if (!this.native) return;
    this.lastStats = { ...this.stats(), connected: false };
    this.native.close();
    this.native = undefined;
  }
}

function toEvent(kind: number, code: string, message: string, peer: string, sid: string): SrtEvent {
  switch (kind) {
    case 2:
      return { type: 'connected', peer, streamId: sid };
    case 3:
      return { type: 'disconnected', message };
    case 4:
      return { type: 'rejected', message };
    default:
      return { type: 'fault', code, message };
  }
}

function zeroStats(): SrtReceiverStats {
  return {
    connected: false,
    messages: 0,
    bytes: 0,
    batches: 0,
    queueDrops: 0,
    queued: 0,
    accepted: 0,
    rejected: 0,
  };
}

export type SrtSenderEvent = RawSrtSenderEvent;

export interface SrtSenderOptions extends SrtSocketOptions {
  /** Listener: callers served at once (default 16); more are refused. */
  maxCallers?: number;
}

/**
 * An SRT sender: TS in (any multiple of 188 bytes), 1316-byte messages out to every connected
 * peer with non-blocking srt_sendmsg2 calls on the JS thread (libsrt's threads do the wire and
 * the retransmissions). `poll()` accepts callers and reports connections made and lost; the
 * owner calls it a few times a second.
 */
export class SrtSender {
  private native: NativeSrtSender | undefined;
  readonly port: number;

  constructor(opts: SrtSenderOptions) {
    const raw = {
      ...socketOptions(opts),
      maxCallers: intIn('maxCallers', opts.maxCallers, 16, 1, 1024),
    };
    try {
      this.native = new (addon().SrtSender)(raw);
    } catch (err) {
      throw fromNative(err);
    }
    this.port = this.native.port;
  }

  /** TS packets to every connected peer (a tail short of 1316 bytes waits for the next call). */
  send(buf: Buffer): void {
    this.native?.send(buf);
  }

  poll(): SrtSenderEvent[] {
    return this.native ? this.native.poll() : [];
  }

  stats(): ReturnType<NativeSrtSender['stats']> {
    return this.native
      ? this.native.stats()
      : {
          messages: 0,
          bytes: 0,
          refused: 0,
          peers: [],
          totals: { sent: 0, lost: 0, retransmitted: 0, dropped: 0 },
        };
  }

  get closed(): boolean {
    return this.native === undefined;
  }

  close(): void {
    this.native?.close();
    this.native = undefined;
  }
}
