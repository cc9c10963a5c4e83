// Catch-all for per-stream paths (`/{name}/mpegts`, `/{name}/index.m3u8`, …): the stream or
// adaptive group that registered `name` in the OttRouter answers; anything else is a 404.
import type { FastifyBaseLogger, FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { VIEWER_GATE_SERVICE } from '../../billing/gate.ts';
import { streamRegistry } from '../../drivers/stream/registry.ts';
import { ERRORS } from '../../errors.ts';
import { setViewerQuery } from '../../ott/access.ts';
import { answerOtherMethod, delivers, OTT_ROUTE_METHODS } from '../../ott/methods.ts';
import { ottRegistry } from '../../ott/registry.ts';
import { maskCredentials } from '../../util/credentials.ts';
import type { AppContext } from '../context.ts';
import { sendError } from '../errors.ts';

/**
 * Playback requests are not request-logged at `info`: a player asks for a playlist, part or
 * segment every second or so, so 1,000 viewers would write thousands of JSON lines a second,
 * and at `info` Fastify's two lines per request doubled the server's CPU per playback request
 * (34 vs 17 µs, bench/RESULTS.md). Warnings and errors still go out; at `debug`/`trace` every
 * request is logged as before.
 */
const PLAYBACK_QUIET_LEVEL = 'info';
const PLAYBACK_LOG_LEVEL = 'warn';

/*
 * A 2 MB segment response flushes the core's cache (the kernel copies it), so the per-request
 * work in front of it runs cold: 6 µs more than a bare node:http handler when warm, ~40 µs
 * when cold, ~10 % of a segment request's CPU (bench/RESULTS.md, OTT delivery). Params
 * validation adds nothing here (both params are strings by construction), so it is skipped;
 * the schema stays for the OpenAPI document.
 */
const skipValidation = () => () => true;

/**
 * `ott-http-trace`: one `info` line per playback request of the stream when its response ends
 * (finished or cut): method, URL (credentials masked), status, bytes sent, duration, client
 * address, Range and User-Agent. While it is on, the stream's requests are all answered here
 * (the native engine and the fast path leave them to the app), so none is missing.
 */
function traceRequest(
  log: FastifyBaseLogger,
  stream: string,
  req: FastifyRequest,
  reply: FastifyReply,
): void {
  const socket = req.raw.socket;
  const sentBefore = socket?.bytesWritten ?? 0;
  const started = performance.now();
  const res = reply.raw;
  let logged = false;
  const done = () => {
    if (logged) return;
    logged = true;
    log.info(
      {
        stream,
        method: req.method,
        url: maskCredentials(req.url),
        status: res.statusCode,
        bytes: (socket?.bytesWritten ?? 0) - sentBefore,
        ms: Math.round((performance.now() - started) * 10) / 10,
        client: socket?.remoteAddress,
        ...(req.headers.range ? { range: req.headers.range } : {}),
        ...(req.headers['user-agent'] ? { userAgent: req.headers['user-agent'] } : {}),
        ...(res.writableFinished ? {} : { aborted: true }),
      },
      'ott http',
    );
  };
  res.once('finish', done);
  res.once('close', done);
}

export async function ottRoutes(app: FastifyInstance, opts: { ctx: AppContext }): Promise<void> {
  const { ottRouter, services } = opts.ctx;
  const streams = ottRegistry(services);
  const running = streamRegistry(services);
  const quiet = app.log.level === PLAYBACK_QUIET_LEVEL;
  app.route<{ Params: { name: string; '*': string } }>({
    // HEAD goes to the stream's handler like GET, which gives it the real Content-Length
    // (Fastify's automatic HEAD route would send 0). OPTIONS is answered here (see below);
    // other methods are not routed at all (404).
    method: OTT_ROUTE_METHODS,
    url: '/:name/*',
    exposeHeadRoute: false,
    ...(quiet ? { logLevel: PLAYBACK_LOG_LEVEL } : {}),
    validatorCompiler: skipValidation,
    // Playback is for viewers and players, not for admin accounts: no Digest here (docs/api.md).
    config: { access: 'public' },
    schema: {
      tags: ['ott'],
      summary: 'OTT playback of a stream or adaptive group (HTTP-TS, HLS, DASH, archive)',
      params: {
        type: 'object',
        properties: {
          name: { type: 'string', description: 'stream-name or adaptive group name' },
          '*': { type: 'string', description: 'mpegts, index.m3u8, index.mpd, segments' },
        },
      },
    },
    handler: (req, reply) => {
      const name = req.params.name;
      const handler = ottRouter.lookup(name);
      if (!handler) return sendError(reply, ERRORS.NOT_FOUND.status, `No stream ${name}`);
      // A stream in a stream worker has no packager here: its record says (drivers/stream).
      const svc = streams.find(name);
      if (svc ? svc.spec['ott-http-trace'] === true : running.find(name)?.httpTrace === true)
        traceRequest(app.log, name, req, reply);
      // Only GET and HEAD reach a handler, which may send media; OPTIONS (a browser player's
      // CORS preflight) is answered by the rule itself, with no verdict and no media.
      if (!delivers(req)) return answerOtherMethod(req, reply);
      // While billing servers are configured every GET and HEAD needs a verdict (HEAD reveals
      // sizes; docs/billing.md); without them this is the whole of the gate.
      const gate = services.get(VIEWER_GATE_SERVICE);
      if (!gate?.active) return handler(req, reply, req.params['*']);
      return gate
        .admit({
          stream: name,
          ip: req.ip,
          headers: req.headers,
          socket: req.raw.socket,
          userAgent: req.headers['user-agent'] ?? '',
          query: req.query as Record<string, unknown>,
          res: reply.raw,
        })
        .then((a) => {
          // Readable by a player page on another origin, as every OTT answer is.
          if (!a.ok)
            return sendError(reply.header('Access-Control-Allow-Origin', '*'), a.status, a.message);
          setViewerQuery(req.raw, a.query);
          return handler(req, reply, req.params['*']);
        });
    },
  });
}
