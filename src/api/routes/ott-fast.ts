// Fast path for live HLS-TS segments: a plain `GET /{name}/seg-<hash>.ts` (no query, no Range)
// whose bytes are in the stream's live window is answered from the HTTP request event itself,
// before Fastify builds its request, logger and hook chain. Anything else goes to the app.
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { Counter, Histogram, Registry } from 'prom-client';
import { CACHE_IMMUTABLE, TYPE_TS, writeWhole } from '../../ott/http.ts';
import { ottRegistry } from '../../ott/registry.ts';
import type { AppContext } from '../context.ts';
import { DURATION, REQUESTS } from './metrics.ts';

/*
 * Why: the kernel copy of a 2 MB segment flushes the core's caches, so the per-request
 * JavaScript in front of it runs cold every time. Through Fastify (request and reply objects,
 * child logger, onRequest/onResponse hooks, the stream → archive → live service dispatch) that
 * cost ~60–140 µs per segment on top of ~400 µs of kernel copy, and held the server at ~0.8×
 * a bare node:http server (bench/RESULTS.md, OTT delivery). This path does what the live
 * service does for such a request (same bytes, headers, holder count, 404s left to the app).
 */

/** `/{name}/seg-<hash>.ts` with a name that needs no decoding; anything else takes the app. */
const LIVE_TS_SEGMENT = /^\/([A-Za-z0-9_.~-]+)\/(seg-[0-9a-f]+\.ts)$/;
/** The labels the app's request metrics give this route (src/api/routes/ott.ts). */
const ROUTE = '/:name/*';
const OK_LABELS = { method: 'GET', route: ROUTE, status: '200' };
const DURATION_LABELS = { method: 'GET', route: ROUTE };

export type FastPath = (req: IncomingMessage, res: ServerResponse) => boolean;

/** A request handler that answers live TS segments and returns false for everything else. */
export function liveSegmentFastPath(ctx: AppContext, metrics: Registry): FastPath {
  const streams = ottRegistry(ctx.services);
  return (req, res) => {
    if (req.method !== 'GET' || req.headers.range !== undefined) return false;
    const m = LIVE_TS_SEGMENT.exec(req.url ?? '');
    if (!m) return false;
    const name = m[1]!;
    const uri = m[2]!;
    // Only a name the stream itself serves (the router holds stream and group names).
    if (!ctx.ottRouter.lookup(name)) return false;
    const store = streams.find(name)?.packager.tsStore;
    const data = store?.get(uri);
    if (!store || !data) return false;
    const started = performance.now();
    // Pooled bytes stay ours until the response is done (finished or aborted).
    const release = store.retain(uri);
    res.once('close', () => {
      release();
      // Counted as the app counts its requests (metrics may be absent in a bare app).
      (metrics.getSingleMetric(REQUESTS) as Counter<string> | undefined)?.inc(OK_LABELS);
      (metrics.getSingleMetric(DURATION) as Histogram<string> | undefined)?.observe(
        DURATION_LABELS,
        (performance.now() - started) / 1000,
      );
    });
    writeWhole(res, data, TYPE_TS, CACHE_IMMUTABLE, true);
    return true;
  };
}
