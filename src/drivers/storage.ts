// Driver of archive storage records (dvr-storage-list.storage[]): one ArchiveStorage per
// record. `dir-path` never changes in place (the plan refuses it); closing leaves the files.
import type { Resource } from '../config/types.ts';
import { statfsProbe } from '../dvr/disk.ts';
import { DVR_DISK_PROBE_SERVICE, dvrStorages } from '../dvr/registry.ts';
import { readStorage } from '../dvr/settings.ts';
import { ArchiveStorage } from '../dvr/storage.ts';
import type { Host, Instance, KindDriver, ResourceStatus, SpecOf } from '../reconciler/driver.ts';

type Spec = SpecOf<'storage'>;

/** The running storage with this id, if any: what streams and groups record to. */
export function storageById(host: Host, id: number): ArchiveStorage | undefined {
  if (id <= 0) return undefined;
  return host.lookup<StorageInstance>('storage', String(id))?.storage;
}

export class StorageInstance implements Instance<Spec> {
  readonly storage: ArchiveStorage;
  private closed = false;

  constructor(
    res: Resource<Spec>,
    private host: Host,
  ) {
    const settings = readStorage(res.spec);
    const probe = host.services.get(DVR_DISK_PROBE_SERVICE) ?? statfsProbe;
    this.storage = new ArchiveStorage(settings, {
      clock: host.clock,
      log: host.log.child({ storage: settings.id }),
      probe,
      holder: { 'data dir': host.dataDir },
    });
  }

  async start(): Promise<void> {
    dvrStorages(this.host.services).set(this.storage.settings.id, this.storage);
    await this.storage.start();
  }

  async update(next: Resource<Spec>): Promise<void> {
    this.storage.update(readStorage(next.spec));
  }

  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    const reg = dvrStorages(this.host.services);
    if (reg.get(this.storage.settings.id) === this.storage) reg.delete(this.storage.settings.id);
    await this.storage.close();
  }

  status(): ResourceStatus {
    const s = this.storage.status();
    return { ...s, state: this.storage.state, message: s.message || undefined };
  }
}

export const storageDriver: KindDriver<'storage'> = {
  kind: 'storage',
  async create(res, host) {
    const inst = new StorageInstance(res, host);
    await inst.start();
    return inst;
  },
};

/**
 * The `dvr-storage-list` settings container: it has no settings of its own (its records are
 * the `storage` resources above); its status lists the running storages by state.
 */
export class StorageListInstance implements Instance<SpecOf<'dvr-storage-list'>> {
  constructor(private host: Host) {}

  async update(): Promise<void> {}

  async close(): Promise<void> {}

  status(): ResourceStatus {
    const list = [...dvrStorages(this.host.services).values()].sort(
      (a, b) => a.settings.id - b.settings.id,
    );
    const bad = list.filter((s) => s.state !== 'ready');
    return {
      state: 'running',
      message: bad.length ? `${bad.length} of ${list.length} storages not ready` : undefined,
      storages: list.map((s) => ({ id: s.settings.id, name: s.settings.name, state: s.state })),
    };
  }
}

export const storageListDriver: KindDriver<'dvr-storage-list'> = {
  kind: 'dvr-storage-list',
  async create(_res, host) {
    return new StorageListInstance(host);
  },
};
