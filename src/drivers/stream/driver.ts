// StreamDriver: the long-lived handle of kind `stream`; creates one StreamInstance per stream
// resource. Also makes sure the stream metrics are registered once per server.
import type { Resource } from '../../config/types.ts';
import type { Host, Instance, KindDriver } from '../../reconciler/driver.ts';
import { StreamInstance, type StreamRecord } from './instance.ts';
import { ensureStreamMetrics } from './metrics.ts';
import { STREAM_PLACEMENT_SERVICE } from './placement.ts';

export class StreamDriver implements KindDriver<'stream'> {
  readonly kind = 'stream' as const;

  async create(res: Resource<StreamRecord>, host: Host): Promise<Instance<StreamRecord>> {
    ensureStreamMetrics(host.services);
    const placed = (await host.services.get(STREAM_PLACEMENT_SERVICE)?.place(res, host)) ?? '';
    if (typeof placed !== 'string') return placed;
    const inst = new StreamInstance(res, host, placed);
    try {
      await inst.start();
    } catch (err) {
      await inst.close();
      throw err;
    }
    return inst;
  }
}

export const streamDriver = new StreamDriver();
