// Shared bits of the EPG drivers: reading the running streams' EPG bindings from the stream
// registry (so channel sets follow the stream records without a call from the stream driver).
import type { StreamBinding } from '../epg/bindings.ts';

export const STREAM_REGISTRY_SERVICE = 'stream-registry';

interface StreamLike {
  /** The stream instance's public binding accessor (StreamInstance.epgBinding). */
  epgBinding?: () => StreamBinding | undefined;
}

/** Bindings of every running stream instance, from host.services 'stream-registry'. */
export function streamRegistryBindings(services: Map<string, unknown>): StreamBinding[] {
  const reg = services.get(STREAM_REGISTRY_SERVICE) as { all?: () => unknown[] } | undefined;
  if (!reg || typeof reg.all !== 'function') return [];
  const out: StreamBinding[] = [];
  for (const inst of reg.all() as StreamLike[]) {
    const b = typeof inst.epgBinding === 'function' ? inst.epgBinding() : undefined;
    if (b?.stream && b.channel) out.push(b);
  }
  return out;
}

export function int(spec: Record<string, unknown>, key: string, dflt: number): number {
  const v = spec[key];
  return typeof v === 'number' && Number.isInteger(v) ? v : dflt;
}

export function str(spec: Record<string, unknown>, key: string, dflt = ''): string {
  const v = spec[key];
  return typeof v === 'string' ? v : dflt;
}
