// Catch-all for per-stream paths (`/{name}/mpegts`, `/{name}/index.m3u8`, …): the stream or
// adaptive group that registered `name` in the OttRouter answers; anything else is a 404.
import type { FastifyInstance } from 'fastify';
import { ERRORS } from '../../errors.ts';
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

export async function ottRoutes(app: FastifyInstance, opts: { ctx: AppContext }): Promise<void> {
  const { ottRouter } = opts.ctx;
  const quiet = app.log.level === PLAYBACK_QUIET_LEVEL;
  app.get<{ Params: { name: string; '*': string } }>('/:name/*', {
    ...(quiet ? { logLevel: PLAYBACK_LOG_LEVEL } : {}),
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
      const handler = ottRouter.lookup(req.params.name);
      if (!handler)
        return sendError(reply, ERRORS.NOT_FOUND.status, `No stream ${req.params.name}`);
      return handler(req, reply, req.params['*']);
    },
  });
}
