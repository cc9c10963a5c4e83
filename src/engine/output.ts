// The contract between the stream engine and its push outputs (src/outputs/<type>/): an output
// is a bus sink the stream starts, subscribes and closes; the registry maps `type` to a factory.

import type { Logger } from 'pino';
import type { Clock } from '../util/clock.ts';
import type { BusSink } from './bus.ts';
import type { ClusterIdentity } from './cluster.ts';
import type { TransportMetrics } from './input.ts';

export interface OutputContext {
  log: Logger;
  clock: Clock;
  /** bitrate-mode 2 or 3: pace at a constant rate. */
  constantRate: boolean;
  /** The constant rate in bit/s; 0 while not known yet (mode 2 measures it first). */
  cbrRate(): number;
  /** The server's cluster identity (peer-auth), as InputContext.cluster. */
  cluster?(): ClusterIdentity | undefined;
}

export interface StreamOutput extends BusSink {
  /** Open sockets or connections; rejects with a message the status shows. */
  start(): Promise<void>;
  /** Release everything. Idempotent. */
  close(): Promise<void>;
  status(): Record<string, unknown>;
  /** Link counters of a transport that recovers loss (RIST, SRT), for /metrics. */
  metrics?(): TransportMetrics;
}

export type OutputFactory = (cfg: Record<string, unknown>, ctx: OutputContext) => StreamOutput;
