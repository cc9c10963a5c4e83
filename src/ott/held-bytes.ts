// What a stream's live stores hold, in bytes: the figure of `sluice_stream_memory_bytes` and of
// `memoryBytes` in /data/stream (docs/api.md), on whichever thread the stream runs.

import type { Services } from '../util/services.ts';
import type { Packager } from './packager.ts';
import { ottRegistry } from './registry.ts';
import type { SegmentStore } from './store.ts';

/** Bytes of media a store holds: its segments (window and grace), the open one's parts, the
 *  init segment. Pooled blocks under them may be larger (docs/ott.md, "Segment memory"). */
export function storeBytes(s: SegmentStore): number {
  let n = s.init?.length ?? 0;
  for (const seg of s.all()) n += seg.size;
  for (const p of s.open?.parts ?? []) n += p.size;
  return n;
}

/** What a stream's packager holds in all its stores (HLS-TS, CMAF renditions, WebVTT). */
export function packagerBytes(p: Packager): number {
  let n = p.tsStore ? storeBytes(p.tsStore) : 0;
  for (const r of p.renditions) n += storeBytes(r.store);
  for (const r of p.vtt?.renditions ?? []) n += storeBytes(r.store);
  return n;
}

/** The segment bytes of the stream named `name` (0 without OTT packaging). */
export function streamMemoryBytes(services: Services, name: string): number {
  const svc = ottRegistry(services).find(name);
  return svc ? packagerBytes(svc.packager) : 0;
}
