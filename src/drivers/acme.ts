// The `acme` settings driver (docs/fleet.md, "HTTPS and ACME"): while `enable` is on, one
// AcmeManager (src/fleet/acme.ts) keeps a certificate for `domains` in <data-dir>/acme/, the
// admin server answers its HTTP-01 challenges, and the HTTPS listeners use it when no
// certificate file of their own is set.
import path from 'node:path';
import type { Resource } from '../config/types.ts';
import { AcmeManager, type AcmeSettings } from '../fleet/acme.ts';
import type { Host, Instance, KindDriver, ResourceStatus, SpecOf } from '../reconciler/driver.ts';
import { ServiceKey } from '../util/services.ts';

type Spec = SpecOf<'acme'>;

export const ACME_SERVICE = new ServiceKey<AcmeManager>('acme');
/** Set by the http-server driver: look at the HTTPS certificate files again now. */
export const HTTPS_REFRESH_SERVICE = new ServiceKey<() => void>('https-refresh');

function settingsOf(spec: Spec): AcmeSettings {
  return {
    directoryUrl: spec['directory-url'],
    email: spec.email,
    domains: spec.domains ?? [],
    renewDays: spec['renew-days'],
  };
}

class AcmeInstance implements Instance<Spec> {
  private manager: AcmeManager | undefined;

  constructor(
    spec: Spec,
    private readonly host: Host,
  ) {
    if (!spec.enable) return;
    this.manager = new AcmeManager(settingsOf(spec), {
      dir: path.join(host.dataDir, 'acme'),
      log: host.log.child({ part: 'acme' }),
      clock: host.clock,
      onIssued: () => host.services.get(HTTPS_REFRESH_SERVICE)?.(),
    });
    host.services.set(ACME_SERVICE, this.manager);
    this.manager.start();
  }

  async update(next: Resource<Spec>): Promise<void> {
    this.manager?.update(settingsOf(next.spec));
  }

  async close(): Promise<void> {
    if (!this.manager) return;
    this.manager.close();
    if (this.host.services.get(ACME_SERVICE) === this.manager)
      this.host.services.delete(ACME_SERVICE);
    this.manager = undefined;
  }

  status(): ResourceStatus {
    const m = this.manager;
    if (!m) return { state: 'off' };
    return {
      state: m.state,
      ...(m.notAfter ? { notAfter: m.notAfter } : {}),
      ...(m.issuedAt ? { issuedAt: m.issuedAt } : {}),
      ...(m.lastError ? { lastError: m.lastError } : {}),
      certificate: m.files.cert,
    };
  }
}

export const acmeDriver: KindDriver<'acme'> = {
  kind: 'acme',
  async create(res, host) {
    return new AcmeInstance(res.spec, host);
  },
};
