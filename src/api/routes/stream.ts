// GET /data/stream and /data/stream/{id}: runtime state of the streams (state, active input,
// per-input status, bitrates, TR 101 290 counters, programmes, switch log, alerts).
import type { FastifyInstance } from 'fastify';
import { streamRegistry } from '../../drivers/stream/registry.ts';
import { HttpError } from '../../errors.ts';
import type { AppContext } from '../context.ts';

const streamSchema = { type: 'object', additionalProperties: true } as const;

export async function streamRoutes(app: FastifyInstance, opts: { ctx: AppContext }): Promise<void> {
  const registry = () => streamRegistry(opts.ctx.services);
  app.get('/data/stream', {
    schema: {
      tags: ['data'],
      summary: 'Runtime state of every running stream',
      response: { 200: { type: 'array', items: streamSchema } },
    },
    handler: async () =>
      registry()
        .all()
        .map((s) => ({ key: s.key, ...s.status() })),
  });
  app.get('/data/stream/:id', {
    schema: {
      tags: ['data'],
      summary: 'Runtime state of one stream, by id, resource key or stream-name',
      params: { type: 'object', properties: { id: { type: 'string' } }, required: ['id'] },
      response: { 200: streamSchema },
    },
    handler: async (req) => {
      const { id } = req.params as { id: string };
      const s = registry().find(id);
      if (!s) throw new HttpError('NOT_FOUND', `no running stream ${id}`);
      return { key: s.key, ...s.status() };
    },
  });
}
