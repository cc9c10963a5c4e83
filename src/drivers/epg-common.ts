// Shared bits of the EPG drivers: reading the running streams' EPG bindings from the stream
// registry (so channel sets follow the stream records without a call from the stream driver).
import type { StreamBinding } from '../epg/bindings.ts';
import type { Services } from '../util/services.ts';
import { STREAM_REGISTRY_SERVICE } from './stream/registry.ts';

/** Bindings of every running stream instance, from the stream registry in host.services. */
export function streamRegistryBindings(services: Services): StreamBinding[] {
  const reg = services.get(STREAM_REGISTRY_SERVICE);
  if (!reg) return [];
  const out: StreamBinding[] = [];
  for (const inst of reg.all()) {
    const b = inst.epgBinding();
    if (b.stream && b.channel) out.push(b);
  }
  return out;
}
