// The contract between the stream engine and its input transports (src/inputs/<type>/): a transport delivers raw
// bytes (aligned or not) and reports its own health; TS analysis happens in the stream instance.

import type { Logger } from 'pino';
import type { Clock } from '../util/clock.ts';
import type { StreamBus } from './bus.ts';
import type { ClusterIdentity } from './cluster.ts';

/** Another running stream or tuner adapter whose output an input reads (by resource key). */
export interface BusRef {
  kind: 'stream' | 'adapter';
  key: string;
}

export interface InputContext {
  log: Logger;
  clock: Clock;
  /** Server data directory (FIFOs created for `pipe` inputs live under it). */
  dataDir: string;
  streamName: string;
  /** Position of the input in the stream's list, for file names and logs. */
  index: number;
  /** Bytes of transport stream, any alignment, valid during the call (sinks that keep bytes
   *  copy them: stream/bus.ts). `owned`: nobody else reads `buf` during the call (a receive
   *  block of this input's own, not a buffer shared with another reader), so the output path
   *  may rewrite it in place instead of copying it. */
  onData(buf: Buffer, owned?: boolean): void;
  /** The output of another running stream or adapter (the demuxer and muxer read streams, a
   *  dvb input its adapter), looked up when the input opens: undefined while it does not run,
   *  which the input reports as its fault until it is reopened. */
  bus(ref: BusRef): StreamBus | undefined;
  /** The next bytes do not continue the previous ones (a file looped, a device reopened): the
   *  stream splices there as at an input switch — continuity counters kept, PIDs marked with
   *  discontinuity_indicator — so players and monitors do not see a break. */
  onDiscontinuity?(reason: string): void;
  /** Whether the stream's consumers want its packets evenly spread in time (BusSink.
   *  acceptsBursts): an input pacing bytes it reads faster than real time asks before each
   *  wait, and may hand them over on a coarser grid while this is false. Absent: true. */
  smooth?(): boolean;
  /** The server's cluster identity (peer-auth), read when the input dials; undefined when the
   *  server has no cluster settings. */
  cluster?(): ClusterIdentity | undefined;
  /** The stream's `order`: when the box cannot carry every stream, receivers shed the
   *  streams of the highest order first (docs/stream.md, "Under overload"). Absent: 0. */
  priority?: number;
}

export interface InputTransport {
  start(): void;
  /** Settles once the transport receives where its record says: resolves when bound (an input
   *  that dials resolves at once), rejects with the bind error (its errno `code` kept). An input
   *  restart that moves a listener waits for it before closing the old one. Absent: start()
   *  already bound, or threw. */
  opened?(): Promise<void>;
  /** Stop and release every socket, file, FIFO, timer and child. Idempotent. */
  close(): Promise<void>;
  /** Transport-level health (connected, restarts, granted buffer, RTP gaps …). */
  status(): Record<string, unknown>;
  /** What keeps the transport from delivering right now ('' = nothing known): a missing
   *  file, a refused connection, a child that cannot run. Shown as the input's message. */
  fault?(): string;
  /** Link counters of a transport that recovers loss (RIST, SRT), for /metrics. */
  metrics?(): TransportMetrics;
  /** Progress of an encoder child (the transcoder input), for /metrics. */
  encoder?(): EncoderMetrics;
}

/** What /metrics shows of an input's encoder: its last progress report, and its restarts. */
export interface EncoderMetrics {
  fps: number;
  /** Encoding speed against real time (1 = real time). */
  speed: number;
  /** Output bit rate, bit/s. */
  bitrate: number;
  frames: number;
  droppedFrames: number;
  duplicatedFrames: number;
  restarts: number;
}

/** What /metrics shows of a recovering transport: packet counters since the input opened, by
 *  kind (`received`, `missing`, `recovered`, `lost`, … — each transport its own), and the RTT. */
export interface TransportMetrics {
  protocol: string;
  rttSeconds: number;
  packets: Record<string, number>;
}

export type InputFactory = (cfg: Record<string, unknown>, ctx: InputContext) => InputTransport;

/** The state of an input whose type this build does not implement. */
export const NOT_SUPPORTED_YET = 'not supported yet';
