// The running streams, shared through host.services so the `/data/stream` routes and the
// metrics collector can read them without going through the reconciler.

import { ServiceKey, type Services } from '../../util/services.ts';
import type { RunningStream } from './running.ts';

export const STREAM_REGISTRY_SERVICE = new ServiceKey<StreamRegistry>('stream-registry');

export class StreamRegistry {
  private byKey = new Map<string, RunningStream>();

  add(s: RunningStream): void {
    this.byKey.set(s.key, s);
  }

  remove(s: RunningStream): void {
    if (this.byKey.get(s.key) === s) this.byKey.delete(s.key);
  }

  all(): RunningStream[] {
    return [...this.byKey.values()].sort(
      (a, b) => a.order - b.order || a.name.localeCompare(b.name),
    );
  }

  /** By resource key (`12`, `name:news`), numeric id, or stream-name. */
  find(id: string): RunningStream | undefined {
    const direct = this.byKey.get(id) ?? this.byKey.get(`name:${id}`);
    if (direct) return direct;
    for (const s of this.byKey.values()) if (s.name === id || String(s.id) === id) return s;
    return undefined;
  }
}

export function streamRegistry(services: Services): StreamRegistry {
  let r = services.get(STREAM_REGISTRY_SERVICE);
  if (!r) {
    r = new StreamRegistry();
    services.set(STREAM_REGISTRY_SERVICE, r);
  }
  return r;
}
