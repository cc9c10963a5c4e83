// Publishes one stream's live HLS-TS responses to the native live engine (src/native/live-http.ts):
// every segment the store holds under `/{name}/seg-<hash>.ts` and the plain playlists under
// `/{name}/index.m3u8` and `/{name}/ts.m3u8`, with the bytes and headers the JavaScript fast path
// (src/api/routes/ott-fast.ts) would send for the same request. Kept in step with the stores on
// every change, so the engine never answers what the app would not.

import type { LiveDelivery, LivePublishing } from '../native/live-http.ts';
import { ServiceKey, type Services } from '../util/services.ts';
import { ottCachePolicy } from './cache-policy.ts';
import { TYPE_M3U8, TYPE_TS, wholeHead } from './http.ts';
import { ottRegistry } from './registry.ts';
import { OTT_ROUTER_SERVICE } from './router.ts';
import type { StreamOttService } from './service.ts';
import type { SegmentStore } from './store.ts';

/** The process's live engine in `host.services` (absent: nothing is published). */
export const LIVE_DELIVERY_SERVICE = new ServiceKey<LiveDelivery>('live-delivery');
/** In a stream worker: its handle on the main thread's engine (LiveDelivery.attach), which
 *  streams publish into instead. */
export const LIVE_PUBLISHING_SERVICE = new ServiceKey<LivePublishing>('live-publishing');

/** The characters of a stream name the fast paths take as it is (no percent-decoding needed);
 *  other names stay with the app. Shared with src/api/routes/ott-fast.ts. */
export const PLAIN_NAME_CHARS = 'A-Za-z0-9_.~-';
const PLAIN_NAME = new RegExp(`^[${PLAIN_NAME_CHARS}]+$`);
const PLAYLISTS = ['index.m3u8', 'ts.m3u8'] as const;

/** What goes out under one key: a segment (its store URI set) or a playlist. */
interface Entry {
  body: Buffer;
  cache: string;
  segmentUri?: string;
}

export class LivePublisher {
  /** Key → what was published under it. */
  private published = new Map<string, Entry>();
  private watched = new Map<SegmentStore, () => void>();
  private closed = false;

  constructor(
    private readonly delivery: LivePublishing,
    private readonly name: string,
    private readonly svc: StreamOttService,
    private readonly services: Services,
  ) {
    this.sync();
  }

  /** Bring the engine's entries to what the stores hold now. */
  readonly sync = (): void => {
    if (this.closed) return;
    const p = this.svc.packager;
    this.watch([p.tsStore, ...(p.vtt?.renditions ?? []).map((r) => r.store)]);
    const segmentCache = ottCachePolicy(this.services).segment;
    const want = new Map<string, Entry>();
    if (this.served()) {
      const store = p.tsStore;
      if (store) {
        for (const seg of store.all()) {
          const body = store.get(seg.uri);
          // (An empty body has no `bytes=0-` answer but a 416: left to the app.)
          if (body?.length)
            want.set(`/${this.name}/${seg.uri}`, {
              body,
              cache: segmentCache,
              segmentUri: seg.uri,
            });
        }
      }
      for (const file of PLAYLISTS) {
        const body = this.svc.plainTsPlaylist(file);
        if (body) want.set(`/${this.name}/${file}`, { body, cache: this.svc.liveCache() });
      }
    }
    for (const key of this.published.keys()) {
      if (want.has(key)) continue;
      this.published.delete(key);
      this.delivery.unpublish(key);
    }
    for (const [key, w] of want) {
      const was = this.published.get(key);
      if (was?.body === w.body && was.cache === w.cache) continue;
      this.published.set(key, w);
      if (w.segmentUri !== undefined) {
        // The engine holds the pooled bytes until it no longer sends them.
        const release = p.tsStore!.retain(w.segmentUri);
        this.delivery.publish(
          key,
          wholeHead(w.body.length, TYPE_TS, w.cache, true),
          w.body,
          release,
          wholeHead(w.body.length, TYPE_TS, w.cache, true, true),
          true,
        );
      } else {
        this.delivery.publish(key, wholeHead(w.body.length, TYPE_M3U8, w.cache, false), w.body);
      }
    }
  };

  close(): void {
    if (this.closed) return;
    this.closed = true;
    for (const off of this.watched.values()) off();
    this.watched.clear();
    for (const key of this.published.keys()) this.delivery.unpublish(key);
    this.published.clear();
  }

  /** As the fast path checks per request: the name routes to a stream and this is its service.
   *  (While viewers need a verdict the engine answers only requests holding a viewer pass.) */
  private served(): boolean {
    if (!PLAIN_NAME.test(this.name)) return false;
    // Traced requests are all answered by the app, which logs them (ott-http-trace).
    if (this.svc.spec['ott-http-trace'] === true) return false;
    const router = this.services.get(OTT_ROUTER_SERVICE);
    return !!router?.lookup(this.name) && ottRegistry(this.services).find(this.name) === this.svc;
  }

  /** Listen to exactly these stores (subtitle renditions come and go). */
  private watch(stores: (SegmentStore | undefined)[]): void {
    for (const [store, off] of this.watched) {
      if (stores.includes(store)) continue;
      off();
      this.watched.delete(store);
    }
    for (const store of stores)
      if (store && !this.watched.has(store)) this.watched.set(store, store.onChange(this.sync));
  }
}
