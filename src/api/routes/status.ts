// GET /data/status: where the config comes from and what the reconcile loop did with it.
import type { FastifyInstance } from 'fastify';
import type { AppContext } from '../context.ts';

export async function statusRoutes(app: FastifyInstance, opts: { ctx: AppContext }): Promise<void> {
  const { ctx } = opts;
  app.get('/data/status', {
    schema: {
      tags: ['data'],
      summary: 'Config source, revision, last apply result, last error, per-resource status',
      response: {
        200: {
          type: 'object',
          additionalProperties: true,
          properties: { source: { type: 'object', additionalProperties: true } },
        },
      },
    },
    handler: () => {
      const loop = ctx.loop.status();
      return { source: ctx.config.sourceInfo(), ...(typeof loop === 'object' ? loop : {}) };
    },
  });
}
