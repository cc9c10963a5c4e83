// Fast path for live HLS over TS: a plain `GET /{name}/seg-<hash>.ts` (no query, no Range) whose
// bytes are in the stream's live window, and a plain `GET /{name}/index.m3u8` or `ts.m3u8` of a
// stream packaging HLS-TS, are answered from the HTTP request event itself, before Fastify
// builds its request, logger and hook chain. Anything else goes to the app.
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { Counter, Histogram, Registry } from 'prom-client';
import { CACHE_IMMUTABLE, CACHE_LIVE, TYPE_M3U8, TYPE_TS, writeWhole } from '../../ott/http.ts';
import { ottRegistry } from '../../ott/registry.ts';
import type { AppContext } from '../context.ts';
import { DURATION, REQUESTS } from './metrics.ts';

/*
 * Why: the kernel copy of a 2 MB segment flushes the core's caches, so the per-request
 * JavaScript in front of it runs cold every time. Through Fastify (request and reply objects,
 * child logger, onRequest/onResponse hooks, the stream → archive → live service dispatch) that
 * cost ~60–140 µs per segment on top of ~400 µs of kernel copy, and held the server at ~0.8×
 * a bare node:http server (bench/RESULTS.md, OTT delivery). Playlists are small, so there the
 * same path is most of the cost (~24 µs against ~11 µs for a bare server). This path does
 * what the live service does for such a request (same bytes, headers, holder count; 404s and
 * every other case left to the app).
 */

/** `/{name}/<file>` with a name that needs no decoding; anything else takes the app. */
const LIVE_TS_PATH = /^\/([A-Za-z0-9_.~-]+)\/(seg-[0-9a-f]+\.ts|index\.m3u8|ts\.m3u8)$/;
/** The labels the app's request metrics give this route (src/api/routes/ott.ts). */
const ROUTE = '/:name/*';
const OK_LABELS = { method: 'GET', route: ROUTE, status: '200' };
const DURATION_LABELS = { method: 'GET', route: ROUTE };
/** `s` of `seg-…`: the segment alternative of LIVE_TS_PATH (playlists start with `i`/`t`). */
const SEG_PREFIX = 's'.charCodeAt(0);

export type FastPath = (req: IncomingMessage, res: ServerResponse) => boolean;

/** A request handler that answers live TS segments and playlists, false for anything else. */
export function liveTsFastPath(ctx: AppContext, metrics: Registry): FastPath {
  const streams = ottRegistry(ctx.services);
  return (req, res) => {
    if (req.method !== 'GET' || req.headers.range !== undefined) return false;
    const m = LIVE_TS_PATH.exec(req.url ?? '');
    if (!m) return false;
    const name = m[1]!;
    const file = m[2]!;
    // Only a name the stream itself serves (the router holds stream and group names).
    if (!ctx.ottRouter.lookup(name)) return false;
    const svc = streams.find(name);
    if (!svc) return false;
    const started = performance.now();
    const count = () => {
      // Counted as the app counts its requests (metrics may be absent in a bare app).
      (metrics.getSingleMetric(REQUESTS) as Counter<string> | undefined)?.inc(OK_LABELS);
      (metrics.getSingleMetric(DURATION) as Histogram<string> | undefined)?.observe(
        DURATION_LABELS,
        (performance.now() - started) / 1000,
      );
    };
    if (file.charCodeAt(0) !== SEG_PREFIX) {
      const body = svc.plainTsPlaylist(file);
      if (!body) return false;
      res.once('close', count);
      writeWhole(res, body, TYPE_M3U8, CACHE_LIVE, false);
      return true;
    }
    const store = svc.packager.tsStore;
    const data = store?.get(file);
    if (!store || !data) return false;
    // Pooled bytes stay ours until the response is done (finished or aborted).
    const release = store.retain(file);
    res.once('close', () => {
      release();
      count();
    });
    writeWhole(res, data, TYPE_TS, CACHE_IMMUTABLE, true);
    return true;
  };
}
