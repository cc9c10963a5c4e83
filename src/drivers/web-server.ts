// Driver of the `web-server` settings object (docs/web.md): while `enable` is on, the dashboard
// answers at `ui-path` and its live feed (src/web/feed.ts) sweeps the running streams every
// second (and the tuner adapters, for the adapters page); both are shared as the `web-ui` service for the admin API's routes.
import type { Resource } from '../config/types.ts';
import type { Host, Instance, KindDriver, ResourceStatus, SpecOf } from '../reconciler/driver.ts';
import { ServiceKey } from '../util/services.ts';
import { StreamFeed } from '../web/feed.ts';
import type { AdapterRow } from '../web/rows.ts';
import type { DvbAdapterInstance } from './dvb-adapter/instance.ts';
import { dvbAdapterRegistry } from './dvb-adapter/registry.ts';
import { type StreamRegistry, streamRegistry } from './stream/registry.ts';

type Spec = SpecOf<'web-server'>;

/** What the UI routes read: where the UI is mounted and the feed behind `/data/events`. */
export interface WebUi {
  uiPath: string;
  feed: StreamFeed;
}

export const WEB_UI_SERVICE = new ServiceKey<WebUi>('web-ui');

/** The adapters' rows, each with the keys of the streams that read it. */
function adapterRows(adapters: DvbAdapterInstance[], streams: StreamRegistry): AdapterRow[] {
  if (adapters.length === 0) return [];
  const readers = new Map<number, string[]>();
  for (const s of streams.all()) {
    for (const id of s.adapterIds()) {
      const list = readers.get(id) ?? [];
      list.push(s.key);
      readers.set(id, list);
    }
  }
  return adapters.map((a) => a.dashboardRow(readers.get(a.id) ?? []));
}

class WebServerInstance implements Instance<Spec> {
  private ui: WebUi | null = null;

  constructor(
    private spec: Spec,
    private readonly host: Host,
  ) {
    this.sync();
  }

  private sync(): void {
    if (!this.spec.enable) {
      this.stop();
      return;
    }
    if (!this.ui) {
      const registry = streamRegistry(this.host.services);
      const adapters = dvbAdapterRegistry(this.host.services);
      const feed = new StreamFeed({
        clock: this.host.clock,
        rows: () => registry.all().map((s) => s.dashboardRow()),
        adapters: () => adapterRows(adapters.all(), registry),
      });
      this.ui = { uiPath: this.spec['ui-path'], feed };
      feed.start();
    }
    this.ui.uiPath = this.spec['ui-path'];
    this.host.services.set(WEB_UI_SERVICE, this.ui);
  }

  private stop(): void {
    if (!this.ui) return;
    this.ui.feed.close();
    if (this.host.services.get(WEB_UI_SERVICE) === this.ui) {
      this.host.services.delete(WEB_UI_SERVICE);
    }
    this.ui = null;
  }

  async update(next: Resource<Spec>): Promise<void> {
    this.spec = next.spec;
    this.sync();
  }

  async close(): Promise<void> {
    this.stop();
  }

  status(): ResourceStatus {
    if (!this.ui) return { state: 'running', enabled: false };
    return {
      state: 'running',
      enabled: true,
      uiPath: this.ui.uiPath,
      clients: this.ui.feed.subscribers,
    };
  }
}

export const webServerDriver: KindDriver<'web-server'> = {
  kind: 'web-server',
  async create(res, host) {
    return new WebServerInstance(res.spec, host);
  },
};
