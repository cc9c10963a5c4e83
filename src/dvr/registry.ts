// The running archive storages, shared through host.services so the /data/dvr-storage-list
// and /data/dvrstat routes can read them; plus the service name for an injected disk probe.

import { ServiceKey, type Services } from '../util/services.ts';
import type { DiskProbe } from './disk.ts';
import type { ArchiveStorage } from './storage.ts';

export const DVR_STORAGES_SERVICE = new ServiceKey<Map<number, ArchiveStorage>>('dvr-storages');
/** Optional DiskProbe in host.services (tests inject disk figures through it). */
export const DVR_DISK_PROBE_SERVICE = new ServiceKey<DiskProbe>('dvr-disk-probe');

export function dvrStorages(services: Services): Map<number, ArchiveStorage> {
  let m = services.get(DVR_STORAGES_SERVICE);
  if (!m) {
    m = new Map();
    services.set(DVR_STORAGES_SERVICE, m);
  }
  return m;
}
