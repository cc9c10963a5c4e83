// The OTT services of one server (held in host.services, not in a module, because a test
// process may run several servers), by stream name, so an adaptive group can combine the
// packagers of its member streams without reaching into the stream instances.

import { ServiceKey, type Services } from '../util/services.ts';
import type { StreamOttService } from './service.ts';

export const OTT_REGISTRY_SERVICE = new ServiceKey<OttRegistry>('ott-registry');

export class OttRegistry {
  private services = new Map<string, StreamOttService>();
  private listeners = new Set<(name: string) => void>();

  register(name: string, svc: StreamOttService): () => void {
    this.services.set(name, svc);
    for (const fn of this.listeners) fn(name);
    return () => {
      if (this.services.get(name) === svc) this.services.delete(name);
    };
  }

  /** Call `fn` with the name of each service registered from now on (before its packager sees
   *  any packet: an adaptive group follows a member's boundaries from its first). */
  onRegister(fn: (name: string) => void): () => void {
    this.listeners.add(fn);
    return () => this.listeners.delete(fn);
  }

  find(name: string): StreamOttService | undefined {
    return this.services.get(name);
  }
}

/** The registry of this server's services map, created on first use. */
export function ottRegistry(services: Services): OttRegistry {
  let r = services.get(OTT_REGISTRY_SERVICE);
  if (!r) {
    r = new OttRegistry();
    services.set(OTT_REGISTRY_SERVICE, r);
  }
  return r;
}
