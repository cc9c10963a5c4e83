// GET /data/dvr-storage-list (storage status records of spec 3) and GET /data/dvrstat (archive
// fill by time interval with markers). Read from the running storages; see docs/dvr.md.
import type { FastifyInstance } from 'fastify';
import { dvrStorages } from '../../dvr/registry.ts';
import { dvrStat } from '../../dvr/stat.ts';
import type { AppContext } from '../context.ts';

const anyObject = { type: 'object', additionalProperties: true } as const;

export async function dvrRoutes(app: FastifyInstance, opts: { ctx: AppContext }): Promise<void> {
  const storages = () =>
    [...dvrStorages(opts.ctx.services).values()].sort((a, b) => a.settings.id - b.settings.id);
  app.get('/data/dvr-storage-list', {
    schema: {
      tags: ['data'],
      summary: 'Archive storages: state, disk figures, cleanup, attached streams',
      response: { 200: { type: 'array', items: anyObject } },
    },
    handler: async () => storages().map((s) => s.status()),
  });
  app.get('/data/dvrstat', {
    schema: {
      tags: ['data'],
      summary: 'Archive fill per time bucket and stream, with event markers',
      querystring: {
        type: 'object',
        properties: {
          storage: { type: 'integer', minimum: 1 },
          stream: { type: 'string' },
          from: { type: 'integer', minimum: 0 },
          to: { type: 'integer', minimum: 0 },
          step: { type: 'integer', minimum: 1 },
        },
        additionalProperties: false,
      },
      response: { 200: anyObject, 400: anyObject },
    },
    handler: async (req, reply) => {
      const q = req.query as {
        storage?: number;
        stream?: string;
        from?: number;
        to?: number;
        step?: number;
      };
      // An inverted interval is a caller's mistake, not an empty archive.
      if (q.from !== undefined && q.to !== undefined && q.from >= q.to)
        return reply.code(400).send({ status: 400, message: 'dvrstat: from must be before to' });
      return dvrStat(storages(), q, opts.ctx.clock.now());
    },
  });
}
