// Cache-Control of OTT media segments (live and archive), from `http-server`
// `segment-cache-max-age` (hot). Held in host.services, as the registry is, because a test
// process may run several servers.
import { ServiceKey, type Services } from '../util/services.ts';

export const OTT_CACHE_SERVICE = new ServiceKey<OttCachePolicy>('ott-cache-policy');
/** Default of `segment-cache-max-age`, seconds (schemas/http-server.schema.json). */
export const DEFAULT_SEGMENT_MAX_AGE = 86_400;

/** The header for a segment kept `maxAge` seconds; 0 = caches must revalidate every time. */
export function segmentCacheControl(maxAge: number): string {
  return maxAge > 0 ? `public, max-age=${maxAge}, immutable` : 'no-cache';
}

export class OttCachePolicy {
  /** Cache-Control of a segment (a name never reused for other bytes). */
  segment = segmentCacheControl(DEFAULT_SEGMENT_MAX_AGE);

  setSegmentMaxAge(seconds: number): void {
    this.segment = segmentCacheControl(seconds);
  }
}

/** The policy of this server's services map, created on first use (defaults without one). */
export function ottCachePolicy(services?: Services): OttCachePolicy {
  if (!services) return new OttCachePolicy();
  let p = services.get(OTT_CACHE_SERVICE);
  if (!p) {
    p = new OttCachePolicy();
    services.set(OTT_CACHE_SERVICE, p);
  }
  return p;
}
