// Driver of the `epg` settings object: retention window, default language, and the src-0 EIT
// database with the EIT sink that streams with `epg-export` feed.

import type { Resource } from '../config/types.ts';
import { EIT_SINK_SERVICE } from '../engine/bus.ts';
import { EitImporter } from '../epg/eit-import.ts';
import {
  acquireEpgRuntime,
  EIT_SOURCE,
  type EpgRuntime,
  type EpgSettings,
  releaseEpgRuntime,
} from '../epg/runtime.ts';
import type { Host, Instance, KindDriver, ResourceStatus, SpecOf } from '../reconciler/driver.ts';
import { streamRegistryBindings } from './epg-common.ts';

type Spec = SpecOf<'epg'>;

export function epgSettings(spec: Spec): EpgSettings {
  return {
    retentionDaysBack: spec['retention-days-back'],
    retentionDaysAhead: spec['retention-days-ahead'],
    defaultLanguage: spec['default-language'],
  };
}

class EpgInstance implements Instance<Spec> {
  private rt: EpgRuntime;
  readonly eit: EitImporter;
  private provider: () => ReturnType<typeof streamRegistryBindings>;
  private closed = false;

  constructor(
    res: Resource<Spec>,
    private host: Host,
  ) {
    this.rt = acquireEpgRuntime(host);
    this.rt.settings = epgSettings(res.spec);
    this.rt.openSource(EIT_SOURCE);
    this.rt.prune();
    this.eit = new EitImporter(this.rt);
    host.services.set(EIT_SINK_SERVICE, this.eit);
    this.provider = () => streamRegistryBindings(host.services);
    this.rt.bindingProviders.add(this.provider);
  }

  async update(next: Resource<Spec>): Promise<void> {
    const before = this.rt.settings;
    this.rt.settings = epgSettings(next.spec);
    if (
      before.retentionDaysAhead !== this.rt.settings.retentionDaysAhead ||
      before.retentionDaysBack !== this.rt.settings.retentionDaysBack
    ) {
      this.rt.prune();
    }
    // The default language changes which text the JSON endpoint picks.
    for (const s of this.rt.sources.values()) s.cache.clear();
  }

  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    this.eit.close();
    if (this.host.services.get(EIT_SINK_SERVICE) === this.eit)
      this.host.services.delete(EIT_SINK_SERVICE);
    this.rt.bindingProviders.delete(this.provider);
    releaseEpgRuntime(this.host, this.rt);
  }

  status(): ResourceStatus {
    const counts = this.rt.source(EIT_SOURCE)?.db.counts();
    return {
      state: 'running',
      retention: this.rt.retentionWindow(),
      eit: { ...this.eit.stats, ...counts },
    };
  }
}

export const epgDriver: KindDriver<'epg'> = {
  kind: 'epg',
  async create(res, host) {
    return new EpgInstance(res, host);
  },
};
