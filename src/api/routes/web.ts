// The dashboard (docs/web.md): its page and bundle at `web-server.ui-path` (reached through the
// URL rewrite in app.ts), who is signed in (/data/me), the live events stream (/data/events:
// stream row deltas and alert events), the config editor's check (/config/check) and the root
// path (./web-root.ts).
import { readFile } from 'node:fs/promises';
import { extname, join, normalize } from 'node:path';
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { ALERTER_SERVICE } from '../../drivers/alerter.ts';
import { MOSAIC_SERVICE } from '../../drivers/mosaic.ts';
import { streamRegistry } from '../../drivers/stream/registry.ts';
import { WEB_UI_SERVICE } from '../../drivers/web-server.ts';
import { HttpError } from '../../errors.ts';
import { UI_BUNDLE_DIR, UI_CSP, uiPage } from '../../web/page.ts';
import { ASSET_TYPES, UI_ROUTE_PREFIX } from '../../web/paths.ts';
import type { AppContext } from '../context.ts';
import { configCheckRoute } from './web-check.ts';
import { webRootRoute } from './web-root.ts';

/** Unsent bytes above which an events client is too slow and is disconnected (it reconnects
 *  and starts again from a snapshot): the server never queues without bound for it. */
export const EVENTS_MAX_BACKLOG = 4 << 20;
export const EVENTS_HEARTBEAT_MS = 15_000;
/** How long the browser keeps a chunk whose name is its content hash. */
const IMMUTABLE = 'public, max-age=31536000, immutable';

function sse(event: string, data: unknown): string {
  return `event: ${event}\ndata: ${JSON.stringify(data)}\n\n`;
}

export async function webRoutes(app: FastifyInstance, opts: { ctx: AppContext }): Promise<void> {
  const { ctx } = opts;
  const ui = () => ctx.services.get(WEB_UI_SERVICE);

  /** The UI's routes answer only under the configured ui-path (never at the internal prefix). */
  const mounted = (req: FastifyRequest) => {
    const w = ui();
    if (!w || req.originalUrl === req.url) throw new HttpError('NOT_FOUND', 'Not Found');
    return w;
  };

  app.get(`${UI_ROUTE_PREFIX}/`, {
    schema: { hide: true },
    handler: (req, reply) => {
      const w = mounted(req);
      return reply
        .type('text/html; charset=utf-8')
        .header('cache-control', 'no-cache')
        .header('content-security-policy', UI_CSP)
        .header('x-content-type-options', 'nosniff')
        .send(uiPage(w.uiPath));
    },
  });
  app.get(`${UI_ROUTE_PREFIX}/redirect`, {
    schema: { hide: true },
    handler: (req, reply) => reply.redirect(mounted(req).uiPath, 301),
  });
  app.get<{ Params: { '*': string } }>(`${UI_ROUTE_PREFIX}/assets/*`, {
    schema: { hide: true },
    handler: async (req, reply) => {
      mounted(req);
      const name = normalize(req.params['*']);
      if (name.startsWith('..') || name.includes('/') || !ASSET_TYPES[extname(name)]) {
        throw new HttpError('NOT_FOUND', 'Not Found');
      }
      const body = await readFile(join(UI_BUNDLE_DIR, name)).catch(() => undefined);
      if (!body) {
        if (name === 'app.js' || name === 'app.css') {
          throw new HttpError(
            'UNAVAILABLE',
            'the dashboard is not built: run scripts/setup (docs/web.md)',
          );
        }
        throw new HttpError('NOT_FOUND', 'Not Found');
      }
      return reply
        .type(ASSET_TYPES[extname(name)]!)
        .header('cache-control', name.startsWith('chunk-') ? IMMUTABLE : 'no-cache')
        .header('x-content-type-options', 'nosniff')
        .send(body);
    },
  });

  app.get('/data/me', {
    schema: {
      tags: ['data'],
      summary:
        'Who is asking (login, role), where the dashboard is mounted and whether the mosaic makes thumbnails',
      response: { 200: { type: 'object', additionalProperties: true } },
    },
    handler: (req) => ({
      login: req.principal?.login ?? null,
      role: req.principal?.role ?? 'viewer',
      uiPath: ui()?.uiPath ?? null,
      mosaic: ctx.services.get(MOSAIC_SERVICE) !== undefined,
    }),
  });

  app.get('/data/stream/:id/guide', {
    schema: {
      tags: ['data'],
      summary: "A stream's EPG binding: source id (0 = EIT) and channel id (empty: none)",
      params: { type: 'object', properties: { id: { type: 'string' } }, required: ['id'] },
      response: { 200: { type: 'object', additionalProperties: true } },
    },
    handler: (req) => {
      const { id } = req.params as { id: string };
      const s = streamRegistry(ctx.services).find(id);
      if (!s) throw new HttpError('NOT_FOUND', `no running stream ${id}`);
      const b = s.epgBinding();
      return { source: b.source, channel: b.channel };
    },
  });

  app.get('/data/epg/streams', {
    schema: {
      tags: ['data'],
      summary:
        "The running streams bound to an EPG channel (`epg-channel` set): the EPG page's rows",
      response: { 200: { type: 'object', additionalProperties: true } },
    },
    handler: () => ({
      streams: streamRegistry(ctx.services)
        .all()
        .map((s) => ({ s, b: s.epgBinding() }))
        .filter(({ b }) => b.channel !== '')
        .map(({ s, b }) => ({
          key: s.key,
          name: s.name,
          title: s.displayName,
          source: b.source,
          channel: b.channel,
        })),
    }),
  });

  app.get('/data/events', {
    schema: {
      tags: ['data'],
      summary:
        'The dashboard feed as Server-Sent Events: `snapshot` and `alerts` first, then `delta` ' +
        '(stream rows, once a second) and alert `raise` / `repeat` / `clear`',
      produces: ['text/event-stream'],
    },
    handler: (req, reply) => eventsStream(ctx, req, reply),
  });

  await app.register(configCheckRoute, { ctx });
  await app.register(webRootRoute, { ctx });
}

function eventsStream(ctx: AppContext, req: FastifyRequest, reply: FastifyReply): unknown {
  const w = ctx.services.get(WEB_UI_SERVICE);
  if (!w) throw new HttpError('NOT_FOUND', 'the dashboard is off (web-server.enable)');
  if (req.method === 'HEAD') return reply.type('text/event-stream; charset=utf-8').send();
  reply.hijack();
  const res = reply.raw;
  res.writeHead(200, {
    'content-type': 'text/event-stream; charset=utf-8',
    'cache-control': 'no-cache',
    connection: 'keep-alive',
    'x-accel-buffering': 'no',
  });
  const alerter = ctx.services.get(ALERTER_SERVICE);
  const send = (event: string, data: unknown) => {
    if (res.destroyed) return;
    if (res.writableLength > EVENTS_MAX_BACKLOG) {
      res.destroy();
      return;
    }
    res.write(sse(event, data));
  };
  res.write('retry: 2000\n\n');
  send('snapshot', w.feed.snapshot());
  send('alerts', { enabled: alerter?.enabled ?? false, active: alerter?.active() ?? [] });
  const offFeed = w.feed.subscribe((d) => send('delta', d));
  const offAlerts = alerter?.feed.subscribe((ev) => send(ev.event, ev));
  const beat = ctx.clock.setInterval(() => res.write(': ping\n\n'), EVENTS_HEARTBEAT_MS);
  const done = () => {
    offFeed();
    offAlerts?.();
    beat.cancel();
  };
  req.raw.once('close', done);
  res.once('close', done);
  return undefined;
}
