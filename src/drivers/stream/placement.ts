// Where a stream runs: the stream driver asks the data plane's placement (src/plane/, set in
// host.services by the server) before it runs a stream on this thread. Without one, or when
// it declines, the stream runs here as it always has.
import type { Resource } from '../../config/types.ts';
import type { RecorderTotalsRow } from '../../dvr/recorder-totals.ts';
import type { UdpOwner, UdpTotals } from '../../native/udp.ts';
import type { Host, Instance } from '../../reconciler/driver.ts';
import { ServiceKey } from '../../util/services.ts';
import type { StreamRecord } from './instance.ts';

export interface StreamPlacement {
  /** A running stream in another thread, or why it runs on this one ('' when no worker
   *  threads are configured: nothing to say). */
  place(res: Resource<StreamRecord>, host: Host): Promise<Instance<StreamRecord> | string>;
  /** How many worker threads new streams may go to (server `stream-workers`). */
  setWorkers(n: number): void;
  /** Each worker: its streams and its event loop over the last second (status, benches). */
  workers(): WorkerLoop[];
  /** The counters the streams elsewhere grew (what `/metrics` adds to this thread's own). */
  udpTotals(): (UdpOwner & UdpTotals)[];
  recorderTotals(): RecorderTotalsRow[];
}

export interface WorkerLoop {
  index: number;
  streams: number;
  /** Event-loop delay over the last second: p99 and max, ms. */
  loopP99Ms: number;
  loopMaxMs: number;
  /** CPU of the worker's thread over the last second, ms. */
  cpuMs: number;
}

export const STREAM_PLACEMENT_SERVICE = new ServiceKey<StreamPlacement>('stream-placement');

/** Set in a stream worker's services: the main thread serves HTTP-TS and the mosaic of the
 *  streams here (from a bus tap), so a stream keeps no HTTP-TS start buffer of its own. */
export const IN_STREAM_WORKER = new ServiceKey<true>('in-stream-worker');
