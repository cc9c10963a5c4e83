// Driver of EPG source records (epg.source[]): one XMLTV importer per record.
import type { Resource } from '../config/types.ts';
import { acquireEpgRuntime, type EpgRuntime, releaseEpgRuntime } from '../epg/runtime.ts';
import { XmltvSource } from '../epg/xmltv-source.ts';
import type { Host, Instance, KindDriver, ResourceStatus, SpecOf } from '../reconciler/driver.ts';

type Spec = SpecOf<'epg-source'>;

export class EpgSourceInstance implements Instance<Spec> {
  private rt: EpgRuntime;
  readonly source: XmltvSource;
  private closed = false;

  constructor(
    res: Resource<Spec>,
    private host: Host,
  ) {
    this.rt = acquireEpgRuntime(host);
    this.source = new XmltvSource(this.rt, res.spec, host.log.child({ epgSource: res.spec.id }));
  }

  async update(next: Resource<Spec>): Promise<void> {
    this.source.update(next.spec);
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

export const epgSourceDriver: KindDriver<'epg-source'> = {
  kind: 'epg-source',
  async create(res, host) {
    return new EpgSourceInstance(res, host);
  },
};
