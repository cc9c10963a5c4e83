// The admin server's Fastify app: auth, /config, /data, /metrics, /openapi.json, OTT paths and
// the plugins other parts add. It never listens: main serves `app.routing` on its own sockets.
import { createServer } from 'node:http';
import swagger from '@fastify/swagger';
import Fastify, {
  type FastifyBaseLogger,
  type FastifyInstance,
  type FastifyRequest,
} from 'fastify';
import { ADMIN_AUTH_SERVICE } from '../drivers/http-server.ts';
import { WEB_UI_SERVICE } from '../drivers/web-server.ts';
import { maskCredentials } from '../util/credentials.ts';
import { uiRewrite } from '../web/paths.ts';
import { installAuth } from './auth/plugin.ts';
import { configRoutes } from './config/routes.ts';
import { type AppContext, DEFAULT_NONCE_LIFETIME_SEC, DEFAULT_REALM } from './context.ts';
import { installChangeGuard } from './csrf.ts';
import {
  BODY_LIMIT_BYTES,
  ERROR_SCHEMA,
  frameworkError,
  ISSUE_SCHEMA,
  installErrorHandlers,
} from './errors.ts';
import { jsonBodyParser } from './json-body.ts';
import { installDataMasking } from './mask-data.ts';
import { apiPlugins } from './routes/index.ts';
import { installRequestMetrics, metricsRegistry, metricsRoutes } from './routes/metrics.ts';
import { ottRoutes } from './routes/ott.ts';
import { liveTsFastPath } from './routes/ott-fast.ts';
import { statusRoutes } from './routes/status.ts';

export const MERGE_PATCH_TYPE = 'application/merge-patch+json';
const API_VERSION = '1';

/** A request as Fastify's request lines log it, with the credentials of its URL masked (a
 *  playback URL carries the viewer's token). Headers are never logged: Authorization, Cookie. */
function requestLogFields(req: FastifyRequest) {
  return {
    method: req.method,
    url: maskCredentials(req.url),
    host: req.host,
    remoteAddress: req.ip,
    remotePort: req.socket?.remotePort,
  };
}

export async function buildApp(ctx: AppContext): Promise<FastifyInstance> {
  const app = Fastify({
    // pino's Logger is a FastifyBaseLogger; the cast keeps the app's type the default one. A
    // logger's own `req` serializer takes the place of Fastify's.
    loggerInstance: ctx.log.child(
      {},
      { serializers: { req: requestLogFields } },
    ) as FastifyBaseLogger,
    // Never trust forwarded headers: loopback anonymity is judged by the socket's peer.
    trustProxy: false,
    bodyLimit: BODY_LIMIT_BYTES,
    // The server made here is never listened on: the http-server driver owns the sockets and
    // hands requests to `app.routing(req, res)` (after `await app.ready()`).
    serverFactory: (handler) => createServer(handler),
    ajv: { customOptions: { allErrors: true, removeAdditional: false } },
    frameworkErrors: frameworkError,
    // The dashboard's paths under `web-server.ui-path` go to its fixed routes (routes/web.ts).
    rewriteUrl: (req) => {
      const ui = ctx.services.get(WEB_UI_SERVICE);
      return (ui && req.url && uiRewrite(req.url, ui.uiPath)) || req.url || '/';
    },
  });

  // JSON only: a text/plain or form body is what a page of any site can send (./csrf.ts).
  app.removeContentTypeParser(['application/json', 'text/plain']);
  for (const type of ['application/json', MERGE_PATCH_TYPE]) {
    app.addContentTypeParser(type, { parseAs: 'string' }, jsonBodyParser(app));
  }
  app.addSchema(ISSUE_SCHEMA);
  app.addSchema(ERROR_SCHEMA);
  installErrorHandlers(app);
  installRequestMetrics(app, metricsRegistry(ctx.services));
  installAuth(app, {
    users: ctx.users,
    clock: ctx.clock,
    realm: ctx.realm ?? DEFAULT_REALM,
    nonceLifetimeSec: ctx.nonceLifetimeSec ?? DEFAULT_NONCE_LIFETIME_SEC,
    ...(ctx.digestAlgorithms ? { algorithms: ctx.digestAlgorithms } : {}),
    // `http-server.realm` and `nonce-lifetime-sec`, as the http-server driver last applied them.
    settings: () => ctx.services.get(ADMIN_AUTH_SERVICE),
  });
  installChangeGuard(app);
  installDataMasking(app);

  await app.register(swagger, {
    openapi: {
      openapi: '3.0.3',
      info: {
        title: 'sluice admin API',
        description:
          'Configuration as code (/config), runtime state (/data), metrics and OTT playback. ' +
          'HTTP Digest (RFC 7616) for every client except 127.0.0.1; see docs/api.md.',
        version: API_VERSION,
      },
      components: {
        securitySchemes: { digest: { type: 'http', scheme: 'digest' } },
      },
      security: [{ digest: [] }],
    },
  });

  app.get('/openapi.json', { schema: { hide: true } }, () => app.swagger());
  await app.register(configRoutes, { ctx });
  await app.register(statusRoutes, { ctx });
  await app.register(metricsRoutes, { ctx });
  for (const plugin of apiPlugins) await app.register(plugin, { ctx });
  await app.register(ottRoutes, { ctx });
  // Live HLS-TS segments and playlists are answered before Fastify's routing (why: see
  // ./routes/ott-fast.ts); main hands `app.routing` to the HTTP listeners, so the check goes
  // in front of it there.
  const fast = liveTsFastPath(ctx, metricsRegistry(ctx.services));
  const routing = app.routing;
  app.routing = (req, res) => {
    if (!fast(req, res)) routing.call(app, req, res);
  };
  return app;
}
