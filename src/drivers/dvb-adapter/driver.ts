// The `dvb-adapter` driver: one DvbAdapterInstance per tuner adapter record, listed in the
// adapter registry (/data/dvb-adapter, /metrics).
import type { Resource } from '../../config/types.ts';
import type { Host, Instance, KindDriver, SpecOf } from '../../reconciler/driver.ts';
import { type DvbDevices, nativeDevices } from './devices.ts';
import { DvbAdapterInstance } from './instance.ts';
import { ensureDvbMetrics } from './metrics.ts';
import { dvbAdapterRegistry } from './registry.ts';

type Spec = SpecOf<'dvb-adapter'>;

export class DvbAdapterDriver implements KindDriver<'dvb-adapter'> {
  readonly kind = 'dvb-adapter' as const;

  constructor(private readonly devices: DvbDevices = nativeDevices) {}

  async create(res: Resource<Spec>, host: Host): Promise<Instance<Spec>> {
    ensureDvbMetrics(host.services);
    const inst = new DvbAdapterInstance(res, host, this.devices);
    await inst.start();
    dvbAdapterRegistry(host.services).add(inst);
    return inst;
  }
}

export const dvbAdapterDriver = new DvbAdapterDriver();
