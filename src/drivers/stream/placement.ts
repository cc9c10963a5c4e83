// Where a stream runs: the stream driver asks the data plane's placement (src/plane/, set in
// host.services by the server) before it runs a stream on this thread. Without one, or when
// it declines, the stream runs here as it always has.
import type { Resource } from '../../config/types.ts';
import type { Host, Instance } from '../../reconciler/driver.ts';
import { ServiceKey } from '../../util/services.ts';
import type { StreamRecord } from './instance.ts';

export interface StreamPlacement {
  /** A running stream in another thread, or why it runs on this one ('' when no worker
   *  threads are configured: nothing to say). */
  place(res: Resource<StreamRecord>, host: Host): Promise<Instance<StreamRecord> | string>;
  /** How many worker threads new streams may go to (server `stream-workers`). */
  setWorkers(n: number): void;
}

export const STREAM_PLACEMENT_SERVICE = new ServiceKey<StreamPlacement>('stream-placement');
