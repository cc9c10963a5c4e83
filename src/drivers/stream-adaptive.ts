// Driver of kind `stream-adaptive`: an adaptive group delivered at `/{stream-name}/…` from the
// OTT packagers of its member streams (src/ott/adaptive.ts; docs/ott.md "Adaptive groups").

import type { Resource } from '../config/types.ts';
import { GroupArchive } from '../dvr/adaptive-archive.ts';
import { epgLookupFrom } from '../dvr/epg.ts';
import { AdaptiveGroup, type GroupMember } from '../ott/adaptive.ts';
import { ottCachePolicy } from '../ott/cache-policy.ts';
import { OTT_BOTH, OTT_CMAF, OTT_HLS_TS } from '../ott/options.ts';
import { ottRegistry } from '../ott/registry.ts';
import { OTT_ROUTER_SERVICE } from '../ott/router.ts';
import type { Host, Instance, KindDriver, ResourceStatus, SpecOf } from '../reconciler/driver.ts';
import type { FieldChange } from '../reconciler/types.ts';
import { storageById } from './storage.ts';

type Spec = SpecOf<'stream-adaptive'>;

class AdaptiveGroupInstance implements Instance<Spec> {
  readonly group: AdaptiveGroup;
  private unregister?: () => void;
  private unlisten: () => void;
  private message?: string;
  /** Member stream names as last seen: a member recreated is found by name before the host
   *  lists its new instance. */
  private names = new Map<number, string>();

  constructor(
    private res: Resource<Spec>,
    private host: Host,
  ) {
    const mode = res.spec['ott-hls'];
    const segmentDuration = res.spec['ott-segment-duration'];
    const router = host.services.get(OTT_ROUTER_SERVICE);
    this.group = new AdaptiveGroup({
      name: this.name,
      mode,
      segmentDuration,
      window: res.spec['ott-window'],
      members: () => this.members(),
      clock: host.clock,
      cache: ottCachePolicy(host.services),
      // Member paths go to the member stream's own handler, which answers archive requests.
      route: (member) => router?.lookup(member),
      archive: new GroupArchive({
        group: this.name,
        ts: mode === OTT_HLS_TS || mode === OTT_BOTH,
        cmaf: mode === OTT_CMAF || mode === OTT_BOTH,
        target: segmentDuration,
        members: () => this.members(),
        storage: (id) => storageById(host, id),
        epg: epgLookupFrom(host.services),
        clock: host.clock,
        log: host.log.child({ group: this.name }),
        cache: ottCachePolicy(host.services),
      }),
    });
    // A member's OTT service (new, or after a restart) is followed from its first segment.
    this.unlisten = ottRegistry(host.services).onRegister(() => this.group.members());
    this.group.members();
    try {
      this.unregister = router?.register(this.name, (req, reply, rest) =>
        this.group.handle(req, reply, rest),
      );
    } catch (err) {
      this.message = (err as Error).message;
    }
  }

  get name(): string {
    return this.res.spec['stream-name'];
  }

  private memberIds(): number[] {
    return this.res.spec.streams;
  }

  /** Member streams whose OTT packager runs now (a member may start or restart later). */
  members(): GroupMember[] {
    const out: GroupMember[] = [];
    const registry = ottRegistry(this.host.services);
    for (const id of this.memberIds()) {
      const inst = this.host.lookup<Instance & { name?: string }>('stream', String(id));
      if (inst?.name) this.names.set(id, inst.name);
      const name = this.names.get(id);
      const svc = name ? registry.find(name) : undefined;
      if (name && svc) out.push({ name, svc });
    }
    return out;
  }

  async update(next: Resource<Spec>, _changes: FieldChange[]): Promise<void> {
    // Only hot fields (display-name, note) reach here; the rest restart the group.
    this.res = next;
  }

  async close(): Promise<void> {
    this.unlisten();
    this.group.close();
    this.unregister?.();
    this.unregister = undefined;
  }

  status(): ResourceStatus {
    const running = this.group.members().map((m) => m.name);
    const want = this.memberIds().length;
    const state = this.message ? 'error' : running.length === want ? 'running' : 'degraded';
    return {
      state,
      ...(this.message
        ? { message: this.message }
        : running.length < want
          ? { message: `${want - running.length} of ${want} member streams have no OTT output` }
          : {}),
      members: running,
    };
  }
}

export const streamAdaptiveDriver: KindDriver<'stream-adaptive'> = {
  kind: 'stream-adaptive',
  async create(res: Resource<Spec>, host: Host): Promise<Instance<Spec>> {
    return new AdaptiveGroupInstance(res, host);
  },
};
