// StreamDriver: the long-lived handle of kind `stream`; creates one StreamInstance per stream
// resource. Also makes sure the stream metrics are registered once per server.
import type { Resource } from '../../config/types.ts';
import type { Driver, Host, Instance } from '../../reconciler/driver.ts';
import { StreamInstance } from './instance.ts';
import { countOutputBytes, ensureStreamMetrics } from './metrics.ts';

type Spec = Record<string, unknown>;

export class StreamDriver implements Driver<Spec> {
  readonly kind = 'stream' as const;

  async create(res: Resource<Spec>, host: Host): Promise<Instance<Spec>> {
    ensureStreamMetrics(host.services);
    const inst = new StreamInstance(res, host);
    countOutputBytes(inst);
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
