// Cache-Control of OTT responses, so that a shared cache in front (a CDN, nginx proxy_cache:
// docs/fleet.md, "Behind a cache") answers many players from few origin requests without
// serving anyone stale or someone else's bytes:
//   - segments (live and archive; names never reused for other bytes): `segment-cache-max-age`
//     of `http-server` (hot), `immutable`;
//   - live documents (playlists, MPDs, init segments): half a target duration, at least 1 s, so
//     a cache asks the origin at most about twice per refresh a player makes;
//   - an LL-HLS blocking reload (`_HLS_msn`): the answer to that exact query never changes
//     while the stream runs: six target durations;
//   - archive documents of a closed window (absolute start, a length, all of it recorded): the
//     same bytes until the archive is pruned: an hour at most;
//   - a document written for one viewer (it names its URIs with the viewer's credentials):
//     `private, no-cache`, never kept by a shared cache.
// `segment-cache-max-age` 0 turns all of it off (`no-cache` everywhere).
// Held in host.services, as the registry is, because a test process may run several servers.
import { ServiceKey, type Services } from '../util/services.ts';

export const OTT_CACHE_SERVICE = new ServiceKey<OttCachePolicy>('ott-cache-policy');
/** Default of `segment-cache-max-age`, seconds (schemas/http-server.schema.json). */
export const DEFAULT_SEGMENT_MAX_AGE = 86_400;
/** What a response no cache may keep without asking again. */
export const NO_CACHE = 'no-cache';
/** A document that carries one viewer's credentials. */
export const PRIVATE_DOCUMENT = 'private, no-cache';
/** Blocking playlist reloads are kept this many target durations. */
const BLOCKING_TARGETS = 6;
/** Archive documents of a closed window are kept at most this long, seconds. */
const ARCHIVE_DOCUMENT_MAX_AGE = 3600;

/** The header for a segment kept `maxAge` seconds; 0 = caches must revalidate every time. */
export function segmentCacheControl(maxAge: number): string {
  return maxAge > 0 ? `public, max-age=${maxAge}, immutable` : NO_CACHE;
}

function publicFor(seconds: number): string {
  return `public, max-age=${seconds}`;
}

export class OttCachePolicy {
  private maxAge = DEFAULT_SEGMENT_MAX_AGE;
  /** Cache-Control of a segment (a name never reused for other bytes). */
  segment = segmentCacheControl(DEFAULT_SEGMENT_MAX_AGE);
  private liveByTarget = new Map<number, string>();

  /** `segment-cache-max-age` in seconds (0: caching off). */
  get segmentMaxAge(): number {
    return this.maxAge;
  }

  setSegmentMaxAge(seconds: number): void {
    this.maxAge = seconds;
    this.segment = segmentCacheControl(seconds);
    this.liveByTarget.clear();
  }

  /** A live playlist, MPD or init segment of a stream whose target duration is `targetSec`. */
  live(targetSec: number): string {
    let v = this.liveByTarget.get(targetSec);
    if (v === undefined) {
      v = this.maxAge > 0 ? publicFor(Math.max(1, Math.floor(targetSec / 2))) : NO_CACHE;
      this.liveByTarget.set(targetSec, v);
    }
    return v;
  }

  /** The answer to an LL-HLS blocking reload (`_HLS_msn`, `_HLS_part`). */
  blocking(targetSec: number): string {
    if (this.maxAge <= 0) return NO_CACHE;
    const s = Math.max(1, Math.round(BLOCKING_TARGETS * targetSec));
    return publicFor(Math.min(s, this.maxAge));
  }

  /** An archive document: `closed` when its window is absolute and wholly recorded. */
  archive(closed: boolean, targetSec: number): string {
    if (!closed) return this.live(targetSec);
    if (this.maxAge <= 0) return NO_CACHE;
    return publicFor(Math.min(ARCHIVE_DOCUMENT_MAX_AGE, this.maxAge));
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
