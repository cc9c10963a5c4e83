// Driver of the `web-server` settings object (docs/web.md): while `enable` is on, the dashboard
// answers at `ui-path` and its live feed (src/web/feed.ts) sweeps the running streams every
// second; both are shared as the `web-ui` service for the admin API's routes.
import type { Resource } from '../config/types.ts';
import type { Host, Instance, KindDriver, ResourceStatus, SpecOf } from '../reconciler/driver.ts';
import { ServiceKey } from '../util/services.ts';
import { StreamFeed } from '../web/feed.ts';
import { streamRegistry } from './stream/registry.ts';

type Spec = SpecOf<'web-server'>;

/** What the UI routes read: where the UI is mounted and the feed behind `/data/events`. */
export interface WebUi {
  uiPath: string;
  feed: StreamFeed;
}

export const WEB_UI_SERVICE = new ServiceKey<WebUi>('web-ui');

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
      const feed = new StreamFeed({
        clock: this.host.clock,
        rows: () => registry.all().map((s) => s.dashboardRow()),
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
