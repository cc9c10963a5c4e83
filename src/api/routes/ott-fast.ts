// Fast path for live HLS over TS: a plain `GET /{name}/seg-<hash>.ts` (no query, no Range) whose
// bytes are in the stream's live window, and a plain `GET /{name}/index.m3u8` or `ts.m3u8` of a
// stream packaging HLS-TS, are answered from the HTTP request event itself, before Fastify
// builds its request, logger and hook chain. Anything else goes to the app.
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { Counter, Registry } from 'prom-client';
import { OTT_ACCESS_SERVICE } from '../../ott/access.ts';
import { ottCachePolicy } from '../../ott/cache-policy.ts';
import { TYPE_M3U8, TYPE_TS, writeWhole } from '../../ott/http.ts';
import { LIVE_DELIVERY_SERVICE, PLAIN_NAME_CHARS } from '../../ott/live-publish.ts';
import { ottRegistry } from '../../ott/registry.ts';
import type { AppContext } from '../context.ts';
import { onScrape, REQUESTS } from './metrics.ts';

/*
 * Why: the kernel copy of a 2 MB segment flushes the core's caches, so the per-request
 * JavaScript in front of it runs cold every time. Through Fastify (request and reply objects,
 * child logger, onRequest/onResponse hooks, the stream → archive → live service dispatch) a
 * segment cost 40–145 µs of CPU more than with a bare node:http handler (~400 µs of kernel
 * copy either way), 0.81× its requests/s on a quiet machine. A playlist is small, so there the
 * same path is most of the cost (~23 µs against ~11 µs). This path does what the live service
 * does for such a request (same bytes, headers and holder count); 404s, HEAD, ranges, live
 * parameters and every other case are left to the app. Figures: bench/RESULTS.md.
 */

/** `/{name}/<file>` with a name that needs no decoding; anything else takes the app. */
const LIVE_TS_PATH = new RegExp(
  `^/([${PLAIN_NAME_CHARS}]+)/(seg-[0-9a-f]+\\.ts|index\\.m3u8|ts\\.m3u8)$`,
);
/** The labels the app's request metrics give this route (src/api/routes/ott.ts). */
const ROUTE = '/:name/*';
const OK_LABELS = { method: 'GET', route: ROUTE, status: '200' };
/** `s` of `seg-…`: the segment alternative of LIVE_TS_PATH (playlists start with `i`/`t`). */
const SEG_PREFIX = 's'.charCodeAt(0);

/**
 * Counts fast-path responses in the app's request counter, one `inc` per event-loop turn:
 * prom-client builds a label key string per call, which was ~15 % of a playlist request here
 * (20 vs 17 µs of CPU). The duration histogram is not fed from this path (each observation
 * costs the same); it keeps describing the requests the app routes.
 */
class BatchedCount {
  private pending = 0;

  constructor(private readonly metrics: Registry) {}

  add(): void {
    if (this.pending++ === 0) setImmediate(this.flush);
  }

  /** `n` responses at once (the native engine's, folded in before a scrape). */
  addMany(n: number): void {
    if (n <= 0) return;
    this.pending += n;
    this.flush();
  }

  private readonly flush = (): void => {
    const n = this.pending;
    this.pending = 0;
    // The metric may be absent in an app built without request metrics.
    (this.metrics.getSingleMetric(REQUESTS) as Counter<string> | undefined)?.inc(OK_LABELS, n);
  };
}

export type FastPath = (req: IncomingMessage, res: ServerResponse) => boolean;

/** A request handler that answers live TS segments and playlists, false for anything else. */
export function liveTsFastPath(ctx: AppContext, metrics: Registry): FastPath {
  const streams = ottRegistry(ctx.services);
  const cache = ottCachePolicy(ctx.services);
  const counter = new BatchedCount(metrics);
  // The native engine answers the same requests on connections it holds (src/ott/live-publish.ts):
  // counted with the same labels, folded in before each scrape.
  const delivery = ctx.services.get(LIVE_DELIVERY_SERVICE);
  if (delivery) {
    let seen = 0;
    onScrape(metrics, () => {
      const served = delivery.stats().served;
      counter.addMany(served - seen);
      seen = served;
    });
  }
  return (req, res) => {
    if (req.method !== 'GET' || req.headers.range !== undefined) return false;
    const m = LIVE_TS_PATH.exec(req.url ?? '');
    if (!m) return false;
    // A viewer who needs a verdict goes to the app, where the gate is (docs/billing.md).
    const access = ctx.services.get(OTT_ACCESS_SERVICE);
    if (access?.active && !access.anonymous(req.socket, req.headers)) return false;
    const name = m[1]!;
    const file = m[2]!;
    // Only a name the stream itself serves (the router holds stream and group names).
    if (!ctx.ottRouter.lookup(name)) return false;
    const svc = streams.find(name);
    // Traced requests go to the app, which logs them (ott-http-trace).
    if (!svc || svc.spec['ott-http-trace'] === true) return false;
    if (file.charCodeAt(0) !== SEG_PREFIX) {
      const body = svc.plainTsPlaylist(file);
      if (!body) return false;
      counter.add();
      writeWhole(res, body, TYPE_M3U8, svc.liveCache(), false);
      return true;
    }
    const store = svc.packager.tsStore;
    const data = store?.get(file);
    if (!store || !data) return false;
    // Pooled bytes stay ours until the response is done (finished or aborted).
    const release = store.retain(file);
    res.once('close', release);
    counter.add();
    writeWhole(res, data, TYPE_TS, cache.segment, true);
    return true;
  };
}
