// The running archive storages, shared through host.services so the /data/dvr-storage-list
// and /data/dvrstat routes can read them; plus the service name for an injected disk probe.
import type { ArchiveStorage } from './storage.ts';

export const DVR_STORAGES_SERVICE = 'dvr-storages';
/** Optional DiskProbe in host.services (tests inject disk figures through it). */
export const DVR_DISK_PROBE_SERVICE = 'dvr-disk-probe';

export function dvrStorages(services: Map<string, unknown>): Map<number, ArchiveStorage> {
  let m = services.get(DVR_STORAGES_SERVICE) as Map<number, ArchiveStorage> | undefined;
  if (!m) {
    m = new Map();
    services.set(DVR_STORAGES_SERVICE, m);
  }
  return m;
}
