// Driver of EPG source records (epg.source[]): one XMLTV importer per record.
import type { Resource } from '../config/types.ts';
import { acquireEpgRuntime, type EpgRuntime, releaseEpgRuntime } from '../epg/runtime.ts';
import { sourceSpec, XmltvSource } from '../epg/xmltv-source.ts';
import type { Driver, Host, Instance, ResourceStatus } from '../reconciler/driver.ts';

export class EpgSourceInstance implements Instance {
  private rt: EpgRuntime;
  readonly source: XmltvSource;
  private closed = false;

  constructor(
    res: Resource,
    private host: Host,
  ) {
    this.rt = acquireEpgRuntime(host);
    const spec = sourceSpec(res.spec);
    this.source = new XmltvSource(this.rt, spec, host.log.child({ epgSource: spec.id }));
  }

  async update(next: Resource): Promise<void> {
    this.source.update(sourceSpec(next.spec));
  }

  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    await this.source.close();
    releaseEpgRuntime(this.host, this.rt);
  }

  status(): ResourceStatus {
    const st = this.source.status();
    return { ...st, state: st.state };
  }
}

export const epgSourceDriver: Driver = {
  kind: 'epg-source',
  async create(res, host) {
    return new EpgSourceInstance(res, host);
  },
};
