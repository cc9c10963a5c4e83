// Loads build/Release/sluice_native.node once and describes its raw, unchecked surface.
// Only the façade files in this folder talk to it; everything else imports ts.ts / udp.ts.
import { createRequire } from 'node:module';
import { fileURLToPath } from 'node:url';
import { NativeError } from './errors.ts';

/** Options as the C++ TsAnalyzer reads them (already checked by the façade). */
export interface RawTsOptions {
  dropNull: boolean;
  tr101290: boolean;
  psiAll: boolean;
  psiPids: number[];
  pidTimeoutMs: number;
  /** Int32Array(3) the native push() writes the zero-copy range and the sections waiting into. */
  meta: Int32Array;
  patTimeoutMs: number;
  ptsTimeoutMs: number;
}

export interface RawSection {
  pid: number;
  tableId: number;
  data: Buffer;
}

export interface RawStream {
  pid: number;
  streamType: number;
  /** Tags of the ES-info descriptors, in order. */
  descriptors: number[];
  /** Format identifier of a registration descriptor (0x05), e.g. 'Opus', or ''. */
  registration: string;
  /** ISO 639 language code (descriptor 0x0A), or ''. */
  language: string;
}

export interface RawProgram {
  pnr: number;
  pmtPid: number;
  pcrPid: number;
  version: number;
  serviceName: string;
  providerName: string;
  serviceType: number;
  streams: RawStream[];
}

export interface NativeBissDescrambler {
  /** Descrambles in place; returns the packets descrambled. */
  process(packets: Buffer): number;
  stats(): Record<string, unknown>;
}

export interface NativeTsAnalyzer {
  /** Returns a new Buffer, or undefined when the output is chunk[meta[0], meta[1]). */
  push(chunk: Buffer, nowMs: number): Buffer | undefined;
  takeSections(): RawSection[];
  stats(): Record<string, unknown>;
  programs(): RawProgram[];
  reset(): void;
}

export interface RawUdpOptions {
  port: number;
  address: string;
  bindIf: string;
  ssm: string;
  bufferSize: number;
  maxDatagram: number;
  batchDatagrams: number;
  batchLatencyMs: number;
  queueBatches: number;
  queueBytes: number;
  queueBytesTotal: number;
  /** Shedding order: lower is more important (the last to be shed). */
  priority: number;
  /** Schedules the receive hub's next drain slice (udpDrain) on a later turn of the loop. */
  pump: () => void;
}

export interface NativeUdpReceiver {
  readonly grantedBufferSize: number;
  readonly port: number;
  rejoin(): void;
  stats(): {
    datagrams: number;
    bytes: number;
    batches: number;
    drops: number;
    queueDrops: number;
    queued: number;
    queuedBytes: number;
    truncated: number;
    shed: boolean;
    shedBatches: number;
    shedBytes: number;
  };
  setPriority(priority: number): void;
  close(): void;
}

/** 0 = data (block, datagrams, data length): `block` holds the concatenated datagrams, padded
 *  to 4 bytes, then one int32 length per datagram; 1 = error (message, code); 2 = the socket
 *  was shed (true) or re-admitted (false). */
export type RawUdpEvent = (
  kind: number,
  a: ArrayBuffer | string | boolean,
  b: number | string,
  dataLength?: number,
) => void;

export interface RawRistOptions {
  profile: number;
  peers: { url: string; weight: number; probeHost: string; port: number }[];
  allowIp: string;
  sessionTimeoutMs: number;
  rttMinMs: number;
  rttMaxMs: number;
  bufferMs: number;
  secret: string;
  keySize: number;
  logLevel: number;
  batchBlocks: number;
  batchLatencyMs: number;
  queueBatches: number;
  statsIntervalMs: number;
  /** Schedules the receiver's next drain slice on a later turn of the loop. */
  pump: () => void;
}

export interface NativeRistReceiver {
  stats(): unknown;
  /** One drain slice (the pump's call). */
  drain(): void;
  close(): void;
}

export interface RawRistSenderOptions {
  profile: number;
  /** One rist:// URL per peer, with its weight (same length). */
  urls: string[];
  weights: number[];
  secret: string;
  keySize: number;
  logLevel: number;
  bufferMs: number;
  rttMinMs: number;
  rttMaxMs: number;
  statsIntervalMs: number;
}

export interface NativeRistSender {
  /** TS packets of any count; cut into 1,316-byte payloads (a tail waits for the next write). */
  write(buf: Buffer): void;
  stats(): unknown;
  close(): void;
}

/** A batch: `block` holds the payloads, padded to 4 bytes, then one int32 length per payload. */
export type RawRistData = (block: ArrayBuffer, blocks: number, dataLength: number) => void;
/** An SRT socket's options as the C++ side reads them (native/transport/srt_common.h
 *  OpenSrtSocket; already checked by the façade, src/native/srt.ts). */
export interface RawSrtSocketOptions {
  listen: boolean;
  address: string;
  port: number;
  bindIf: string;
  latencyMs: number;
  lossMaxTtl: number;
  overheadPct: number;
  maxBw: number;
  connectTimeoutMs: number;
  passphrase: string;
  pbkeylen: number;
  tsbpd: boolean;
  streamId: string;
  peerProof: string;
}

/** The C++ SrtReceiver's options. */
export interface RawSrtOptions extends RawSrtSocketOptions {
  batchMessages: number;
  batchLatencyMs: number;
  queueBatches: number;
  pump: () => void;
}

export interface NativeSrtReceiver {
  readonly port: number;
  stats(): Record<string, number | boolean>;
  close(): void;
}

export interface RawSrtSenderEvent {
  type: 'connected' | 'disconnected' | 'fault' | 'rejected';
  peer: string;
  code?: string;
  message?: string;
}

export interface NativeSrtSender {
  readonly port: number;
  send(buf: Buffer): void;
  poll(): RawSrtSenderEvent[];
  stats(): {
    messages: number;
    bytes: number;
    refused: number;
    peers: Record<string, unknown>[];
    /** libsrt's counters summed over every peer since the sender opened (gone ones too). */
    totals: { sent: number; lost: number; retransmitted: number; dropped: number };
  };
  close(): void;
}

/** 0 = data (block, messages, data length) as RawUdpEvent; 1 fault, 2 connected, 3
 *  disconnected, 4 a caller rejected: (kind, code, message, peer, streamId). */
export type RawSrtEvent = (
  kind: number,
  a: ArrayBuffer | string,
  b: number | string,
  c: number | string,
  d?: string,
) => void;

export interface RawLiveHttpStats {
  connections: number;
  adopted: number;
  served: number;
  handedBack: number;
  closedIdle: number;
  bytes: number;
  /** Responses cut because the worker thread that published their body exited. */
  cut: number;
  entries: number;
}

export interface NativeLiveHttp {
  publish: NativeLivePublisher['publish'];
  unpublish(key: string): boolean;
  adopt(fd: number, server: number): boolean;
  closeServer(server: number): void;
  stats(): RawLiveHttpStats;
  setGated(on: boolean): void;
  grant(query: string, ip: string, stream: string, ttlMs: number): void;
  revoke(query: string, ip: string, stream: string): boolean;
  revokeAll(): void;
  /** [key, requests, bytes, …]; key is `query\nip\nstream`. */
  takePassUse(): (string | number)[];
  /** Stops the thread and drops everything; returns the release ids still due. */
  close(): number[];
  /** The engine's id in this process, for `LiveHttp.Publisher` in a worker thread. */
  readonly shareId: number;
  /** Entries published now, from every thread. */
  published(): number;
}

/** A worker thread's publisher into an engine made on another thread. */
export interface NativeLivePublisher {
  publish(
    key: string,
    head: Buffer,
    body: Buffer,
    releaseId: number,
    fromZeroHead?: Buffer,
    forPassHolders?: boolean,
  ): void;
  unpublish(key: string): boolean;
  /** Unpublishes its keys, cuts responses sending its bodies: all of them may go on return. */
  close(): void;
}

/** `handbacks`: fd, server pairs; `releases`: ids of published bodies native no longer uses. */
export type RawLiveHttpEvents = (handbacks: number[], releases: number[]) => void;

export interface RawDvbStatus {
  status: number;
  lock: boolean;
  /** dBm, dB, counters; null when the driver reports none. */
  signal: number | null;
  cnr: number | null;
  preErrorBits: number | null;
  preTotalBits: number | null;
  errorBlocks: number | null;
  totalBlocks: number | null;
}

export interface NativeDvbFrontend {
  info(): { name: string; systems: number[]; api: number };
  tune(
    system: number,
    steps: ({ op: string; value: number } | { op: 'diseqc'; msg: number[] })[],
    props: (readonly [number, number])[],
  ): Promise<void>;
  status(): RawDvbStatus;
  tuned(): { system: number; frequency: number };
  close(releaseLnb: boolean): void;
}

export interface RawDvbDvrOptions {
  adapter: number;
  demux: number;
  pids: number[];
  bufferBytes: number;
  batchBytes: number;
  batchLatencyMs: number;
  queueBatches: number;
}

export interface NativeDvbDvr {
  setPids(pids: number[]): void;
  stats(): {
    bytes: number;
    batches: number;
    queueDrops: number;
    overflows: number;
    readErrors: number;
  };
  close(): void;
}

export interface NativeDvbCa {
  caps(): { slots: number; slotType: number };
  slotInfo(slot: number): { type: number; present: boolean; ready: boolean };
  reset(slot: number): void;
  send(tpdu: Buffer): void;
  stats(): { reads: number; writes: number; errors: number };
  close(): void;
}

/** Routing tables bound by routeTables(): an opaque handle that keeps them alive. */
export interface NativeRouteTables {
  readonly __brand: 'NativeRouteTables';
}

export interface NativeAddon {
  version(): string;
  /** Names the calling thread (15 characters at most; a longer name is not set). */
  nameThread(name: string): void;
  LiveHttp: {
    new (
      onEvents: RawLiveHttpEvents,
      opts: { keepAliveMs: number; stallMs: number },
    ): NativeLiveHttp;
    Publisher: new (
      shareId: number,
      onReleases: (releases: number[]) => void,
    ) => NativeLivePublisher;
  };
  TsAnalyzer: new (opts: RawTsOptions) => NativeTsAnalyzer;
  UdpReceiver: new (opts: RawUdpOptions, onEvent: RawUdpEvent) => NativeUdpReceiver;
  RistReceiver: new (opts: RawRistOptions, onData: RawRistData) => NativeRistReceiver;
  RistSender: new (opts: RawRistSenderOptions) => NativeRistSender;
  /** One drain slice of the UDP receive hub (src/native/udp.ts: the pump). */
  udpDrain(): void;
  SrtReceiver: new (opts: RawSrtOptions, onEvent: RawSrtEvent) => NativeSrtReceiver;
  SrtSender: new (opts: RawSrtSocketOptions & { maxCallers: number }) => NativeSrtSender;
  /** One drain slice of the SRT receive hub (src/native/srt.ts: the pump). */
  srtDrain(): void;
  /** The demuxer's routing tables bound once (src/native/pid-router.ts). */
  routeTables(
    codes: Uint8Array,
    dst: Buffer,
    region: number,
    lens: Int32Array,
    deferred: Int32Array,
    state: Int32Array,
    last: Buffer,
  ): NativeRouteTables;
  /** The demuxer's per-packet routing (src/mpegts/pid-router.ts says what it does). */
  routePackets(tables: NativeRouteTables, src: Buffer, from: number, end: number): number;
  BissDescrambler: {
    new (targets: { pnr: number; cw: Buffer }[]): NativeBissDescrambler;
    readonly batchSize: number;
  };
  bissScramble(packets: Buffer, cw: Buffer, pids: number[], tsc: number): number;
  writeDurable(path: string, data: Buffer, direct?: boolean): Promise<void>;
  writeDurableStats(): import('./fs.ts').WriteDurableStats;
  /** flock(2) on a file: its locked descriptor, or -1 when held elsewhere (src/native/file-lock.ts). */
  lockFile(path: string): number;
  /** Segment blocks as mappings of their own (src/native/pages.ts). */
  mapBlock(bytes: number): Buffer;
  discardPages(block: Buffer, from: number): number;
  residentBytes(buf: Buffer): number;
  DvbFrontend: new (adapter: number, device: number, readOnly: boolean) => NativeDvbFrontend;
  DvbDvr: new (opts: RawDvbDvrOptions, onData: (batch: Buffer) => void) => NativeDvbDvr;
  DvbCa: new (
    adapter: number,
    index: number,
    onEvent: (tpdu: Buffer | null, error: string | null) => void,
  ) => NativeDvbCa;
  /** SO_RCVLOWAT of a socket by fd (src/native/socket.ts). */
  setRecvLowWater(fd: number, bytes: number): void;
  recvLowWater(fd: number): number;
  dvbConstants(): {
    DTV: Record<string, number>;
    SYS: Record<string, number>;
    other: Record<string, number>;
  };
}

/** The built addon; `SLUICE_NATIVE_ADDON` names another build (e.g. one made with
 *  AddressSanitizer, docs/native.md) without touching the shared build/ directory. */
const ADDON_PATH =
  process.env['SLUICE_NATIVE_ADDON'] ||
  fileURLToPath(new URL('../../build/Release/sluice_native.node', import.meta.url));

let cached: NativeAddon | undefined;

/** The loaded addon; throws ERR_NATIVE_LOAD with the reason when it is not built. */
export function addon(): NativeAddon {
  if (cached) return cached;
  try {
    const require = createRequire(import.meta.url);
    cached = require(ADDON_PATH) as NativeAddon;
  } catch (err) {
    throw new NativeError(
      'ERR_NATIVE_LOAD',
      `cannot load ${ADDON_PATH} (run \`npx node-gyp rebuild\`): ${(err as Error).message}`,
    );
  }
  return cached;
}
