// UdpReceiver: the typed façade over the native UDP receiver — a socket read with recvmmsg on the
// shared receive thread, datagrams handed to JS in batches (concatenated) rather than one event
// each. Batches wait in a bounded queue per socket; JS takes them in slices of a few ms, round-
// robin over the sockets, and yields to the event loop between slices (the pump below), so an
// overload is shed where it enters (queueDrops) and never holds the API or the other streams;
// when JS falls behind them all, whole sockets are shed, the least important (priority) first.
import { isIPv4 } from 'node:net';
import { TS_PACKET_SIZE } from '../mpegts/packet.ts';
import { interfaceAddress, isMulticast } from '../util/net.ts';
import { addon, type NativeUdpReceiver } from './addon.ts';
import { argError, fromNative, NativeError } from './errors.ts';

/** Receive buffer asked for when the caller gives none (the issue: ≥ 8 MB for multi-Gbit/s). */
export const DEFAULT_UDP_BUFFER = 8 * 1024 * 1024;
/** A batch is handed to JS after this many datagrams … */
export const DEFAULT_BATCH_DATAGRAMS = 64;
/** … or this long after its first datagram, whichever comes first. */
export const DEFAULT_BATCH_LATENCY_MS = 5;
/** Largest datagram kept whole; longer ones are truncated and counted. 7×188 TS + RTP fits easily. */
export const DEFAULT_MAX_DATAGRAM = 4096;
/** Batches waiting for the JS thread before new ones are dropped (counted as queueDrops). */
export const DEFAULT_QUEUE_BATCHES = 256;
/** Bytes of batches waiting for JS on one socket before new ones are dropped: 8 s of an
 *  8 Mbit/s stream, 1 s at 64 Mbit/s (a stalled loop's backlog), not the 21 MB that 256 full
 *  batches could be. */
export const DEFAULT_QUEUE_BYTES = 8 * 1024 * 1024;
/** … and over every socket of the receive thread: under overload the queues hold at most
 *  this, whatever the number of streams (about 1.3 s of 100 × 8 Mbit/s; drops are counted per
 *  socket as queueDrops). */
export const DEFAULT_QUEUE_BYTES_TOTAL = 128 * 1024 * 1024;

/** The receive hub's pump: after a drain slice that used its time, the next waits for the
 *  next turn of the event loop (after its timers and I/O: the API's requests, other sockets). */
function pump(): void {
  setImmediate(drainSlice);
}

function drainSlice(): void {
  addon().udpDrain();
}

export interface UdpReceiverOptions {
  /** UDP port, 0 for any free port (see `port`). */
  port: number;
  /** Multicast group to join, or the local unicast address to bind. Default 0.0.0.0. */
  address?: string;
  /** Interface for the multicast join: its IPv4 address or its name (e.g. `lo`, `eth0`). */
  bindIf?: string;
  /** Source address for a source-specific (SSM) join; needs a multicast `address`. */
  ssm?: string;
  /** Receive buffer to request (bytes); the kernel may grant less: see grantedBufferSize. */
  bufferSize?: number;
  maxDatagram?: number;
  batchDatagrams?: number;
  batchLatencyMs?: number;
  queueBatches?: number;
  /** See DEFAULT_QUEUE_BYTES and DEFAULT_QUEUE_BYTES_TOTAL. */
  queueBytes?: number;
  queueBytesTotal?: number;
  /** Shedding order when the JS thread falls behind: lower is more important, shed last (a
   *  stream passes its `order`); ties go to the older socket. Default 0. See setPriority. */
  priority?: number;
  /** The receive thread shed this socket (true: every batch is dropped, counted in shedBatches)
   *  or re-admitted it (false). */
  onShed?: (shed: boolean) => void;
  /**
   * A batch: `datagrams` datagrams concatenated; `lengths[i]` is the size of datagram i. Both
   * are views of the receiver's one batch block, valid until onData returns: the next batch is
   * copied over them. Copy what must outlive the call.
   */
  onData: (batch: Buffer, datagrams: number, lengths: Int32Array) => void;
  /** Faults of the receive thread (the receiver keeps running), and exceptions thrown by onData. */
  onError?: (err: Error) => void;
  /** Whose socket this is (a stream's input), for counters that outlive one socket: see
   *  udpOwnerTotals. */
  owner?: UdpOwner;
}

/** A stream's input, the unit the receive counters of /metrics are kept for. */
export interface UdpOwner {
  stream: string;
  input: number;
}

/** The counters of an owner's sockets that only grow (what waits now is left out). */
export type UdpTotals = Omit<UdpReceiverStats, 'queued' | 'queuedBytes' | 'shed'>;

/** Per owner: what its closed sockets counted, and its open receivers. */
const owners = new Map<string, { owner: UdpOwner; closed: UdpTotals; open: Set<UdpReceiver> }>();

function ownerKey(o: UdpOwner): string {
  return `${o.input}\u0000${o.stream}`;
}

function addTotals(to: UdpTotals, s: UdpTotals): void {
  to.datagrams += s.datagrams;
  to.bytes += s.bytes;
  to.batches += s.batches;
  to.drops += s.drops;
  to.queueDrops += s.queueDrops;
  to.truncated += s.truncated;
  to.shedBatches += s.shedBatches;
  to.shedBytes += s.shedBytes;
}

/**
 * Every owner's counters over all the sockets it has had: a reopened input (a restart, a
 * backup probed again) goes on counting from where the closed socket stopped. `keep` says
 * which owners still exist; a forgotten one with no open socket is dropped for good.
 */
export function udpOwnerTotals(keep: (o: UdpOwner) => boolean): (UdpOwner & UdpTotals)[] {
  const out: (UdpOwner & UdpTotals)[] = [];
  for (const [key, o] of owners) {
    if (!keep(o.owner)) {
      if (o.open.size === 0) owners.delete(key);
      continue;
    }
    const t = { ...o.owner, ...o.closed };
    for (const rx of o.open) addTotals(t, rx.stats());
    out.push(t);
  }
  return out;
}

export interface UdpReceiverStats {
  datagrams: number;
  bytes: number;
  batches: number;
  /** Datagrams the kernel dropped because the socket buffer was full (SO_MEMINFO, read now). */
  drops: number;
  /** Batches dropped because JS did not keep up (shed at this socket's queue). */
  queueDrops: number;
  /** Batches waiting for JS now, and their bytes. */
  queued: number;
  queuedBytes: number;
  /** Datagrams longer than maxDatagram (cut). */
  truncated: number;
  /** Shed by the receive thread now (JS behind; this socket among the least important). */
  shed: boolean;
  /** Batches, and their payload bytes, dropped while shed (queued ones included). */
  shedBatches: number;
  shedBytes: number;
}

/** An interface name or IPv4 address → IPv4 address (the first one of the interface). */
export function resolveInterface(nameOrIp: string): string {
  const address = interfaceAddress(nameOrIp);
  if (address === undefined) {
    throw new NativeError('ENODEV', `interface ${nameOrIp} has no IPv4 address`);
  }
  return address;
}

function intIn(name: string, v: unknown, def: number, min: number, max: number): number {
  if (v === undefined) return def;
  if (!Number.isInteger(v) || (v as number) < min || (v as number) > max) {
    throw argError(`${name} must be an integer in [${min}, ${max}], got ${String(v)}`);
  }
  return v as number;
}

const PRIORITY_MIN = -(2 ** 31);
const PRIORITY_MAX = 2 ** 31 - 1;

export class UdpReceiver {
  private native: NativeUdpReceiver | undefined;
  /** Receive buffer the kernel granted (bytes, as usable: Linux reports double, halved here). */
  readonly grantedBufferSize: number;
  /** Requested receive buffer size (bytes). */
  readonly requestedBufferSize: number;
  /** The bound port (useful with port 0). */
  readonly port: number;
  /** Set when the kernel granted less than asked (raise net.core.rmem_max or run as root). */
  readonly bufferWarning?: string;
  private lastStats: UdpReceiverStats | undefined;
  private readonly owner?: UdpOwner;

  constructor(opts: UdpReceiverOptions) {
    if (opts === null || typeof opts !== 'object') throw argError('options must be an object');
    const port = intIn('port', opts.port, -1, 0, 65535);
    if (port < 0) throw argError('port is required');
    if (typeof opts.onData !== 'function') throw argError('onData must be a function');
    if (opts.onError !== undefined && typeof opts.onError !== 'function') {
      throw argError('onError must be a function');
    }
    const address = opts.address ?? '0.0.0.0';
    if (!isIPv4(address)) throw argError(`address must be an IPv4 address, got ${address}`);
    const mcast = isMulticast(address);
    if (opts.bindIf !== undefined && (typeof opts.bindIf !== 'string' || opts.bindIf === '')) {
      throw argError('bindIf must be an interface name or IPv4 address');
    }
    const bindIf = opts.bindIf === undefined ? '' : resolveInterface(opts.bindIf);
    if (opts.ssm !== undefined) {
      if (typeof opts.ssm !== 'string' || !isIPv4(opts.ssm)) throw argError('ssm must be IPv4');
      if (!mcast) throw argError('ssm needs a multicast address');
    }
    const bufferSize = intIn('bufferSize', opts.bufferSize, DEFAULT_UDP_BUFFER, 0, 1 << 30);
    if (opts.onShed !== undefined && typeof opts.onShed !== 'function') {
      throw argError('onShed must be a function');
    }
    const priority = intIn('priority', opts.priority, 0, PRIORITY_MIN, PRIORITY_MAX);
    const onData = opts.onData;
    const onError = opts.onError;
    const onShed = opts.onShed;
    try {
      this.native = new (addon().UdpReceiver)(
        {
          port,
          address,
          bindIf,
          ssm: opts.ssm ?? '',
          bufferSize,
          maxDatagram: intIn(
            'maxDatagram',
            opts.maxDatagram,
            DEFAULT_MAX_DATAGRAM,
            TS_PACKET_SIZE,
            65535,
          ),
          batchDatagrams: intIn(
            'batchDatagrams',
            opts.batchDatagrams,
            DEFAULT_BATCH_DATAGRAMS,
            1,
            1024,
          ),
          batchLatencyMs: intIn(
            'batchLatencyMs',
            opts.batchLatencyMs,
            DEFAULT_BATCH_LATENCY_MS,
            0,
            1000,
          ),
          queueBatches: intIn('queueBatches', opts.queueBatches, DEFAULT_QUEUE_BATCHES, 1, 65536),
          queueBytes: intIn('queueBytes', opts.queueBytes, DEFAULT_QUEUE_BYTES, 65536, 2 ** 40),
          queueBytesTotal: intIn(
            'queueBytesTotal',
            opts.queueBytesTotal,
            DEFAULT_QUEUE_BYTES_TOTAL,
            65536,
            2 ** 40,
          ),
          priority,
          pump,
        },
        (kind, a, b, dataLength) => {
          // An exception must not escape into the addon's callback (N-API would swallow it
          // with a warning): hand it to onError, or rethrow it as an ordinary uncaught error.
          try {
            if (kind === 0) {
              const block = a as ArrayBuffer;
              const n = b as number;
              const len = dataLength as number;
              // Views of the batch's one memory block: datagrams, then their int32 lengths.
              onData(Buffer.from(block, 0, len), n, new Int32Array(block, (len + 3) & ~3, n));
            } else if (kind === 2) onShed?.(a as boolean);
            else onError?.(new NativeError(String(b), String(a), 'recvmmsg'));
          } catch (err) {
            if (onError && kind !== 1) onError(err as Error);
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
    this.grantedBufferSize = this.native.grantedBufferSize;
    this.requestedBufferSize = bufferSize;
    this.port = this.native.port;
    if (opts.owner) {
      this.owner = { stream: opts.owner.stream, input: opts.owner.input };
      const key = ownerKey(this.owner);
      let o = owners.get(key);
      if (!o) {
        const closed = {
          datagrams: 0,
          bytes: 0,
          batches: 0,
          drops: 0,
          queueDrops: 0,
          truncated: 0,
          shedBatches: 0,
          shedBytes: 0,
        };
        o = { owner: this.owner, closed, open: new Set() };
        owners.set(key, o);
      }
      o.open.add(this);
    }
    if (bufferSize > 0 && this.grantedBufferSize < bufferSize) {
      this.bufferWarning =
        `socket receive buffer: asked ${bufferSize} bytes, granted ${this.grantedBufferSize}` +
        ' (raise net.core.rmem_max, or run with CAP_NET_ADMIN)';
    }
  }

  /** Leave and re-join the multicast group (mcast-rejoin-interval); no-op for unicast. */
  rejoin(): void {
    if (!this.native) throw new NativeError('ERR_NATIVE_CLOSED', 'receiver is closed');
    try {
      this.native.rejoin();
    } catch (err) {
      throw fromNative(err);
    }
  }

  /** Change the shedding priority of an open receiver (a stream's `order` changed). */
  setPriority(priority: number): void {
    const p = intIn('priority', priority, 0, PRIORITY_MIN, PRIORITY_MAX);
    this.native?.setPriority(p);
  }

  stats(): UdpReceiverStats {
    return this.native ? this.native.stats() : (this.lastStats ?? zeroStats());
  }

  get closed(): boolean {
    return this.native === undefined;
  }

  /** Stop the thread, close the socket. Idempotent; no onData call follows it. */
  close(): void {
    if (!this.native) return;
    this.native.stats(); // the kernel's drop count, read while the socket is open
    this.native.close();
    // The rest read after the thread stopped: nothing counts after this reading.
    this.lastStats = { ...this.native.stats(), queued: 0, queuedBytes: 0, shed: false };
    this.native = undefined;
    const o = this.owner && owners.get(ownerKey(this.owner));
    if (o?.open.delete(this)) addTotals(o.closed, this.lastStats);
  }
}

function zeroStats(): UdpReceiverStats {
  return {
    datagrams: 0,
    bytes: 0,
    batches: 0,
    drops: 0,
    queueDrops: 0,
    queued: 0,
    queuedBytes: 0,
    truncated: 0,
    shed: false,
    shedBatches: 0,
    shedBytes: 0,
  };
}
