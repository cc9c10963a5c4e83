// The running tuner adapters, shared through host.services for /data/dvb-adapter and /metrics.
import { ServiceKey, type Services } from '../../util/services.ts';
import type { DvbAdapterInstance } from './instance.ts';

export const DVB_ADAPTER_REGISTRY_SERVICE = new ServiceKey<DvbAdapterRegistry>(
  'dvb-adapter-registry',
);

export class DvbAdapterRegistry {
  private byKey = new Map<string, DvbAdapterInstance>();

  add(a: DvbAdapterInstance): void {
    this.byKey.set(a.key, a);
  }

  remove(a: DvbAdapterInstance): void {
    if (this.byKey.get(a.key) === a) this.byKey.delete(a.key);
  }

  all(): DvbAdapterInstance[] {
    return [...this.byKey.values()].sort((a, b) => a.id - b.id);
  }

  /** By resource key, id or name. */
  find(id: string): DvbAdapterInstance | undefined {
    const direct = this.byKey.get(id);
    if (direct) return direct;
    for (const a of this.byKey.values()) if (a.name === id || String(a.id) === id) return a;
    return undefined;
  }
}

export function dvbAdapterRegistry(services: Services): DvbAdapterRegistry {
  let r = services.get(DVB_ADAPTER_REGISTRY_SERVICE);
  if (!r) {
    r = new DvbAdapterRegistry();
    services.set(DVB_ADAPTER_REGISTRY_SERVICE, r);
  }
  return r;
}
