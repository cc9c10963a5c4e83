// GET /data/dvb-adapter and /data/dvb-adapter/{id}: runtime state of the tuner adapters (state,
// lock, signal dBm, SNR dB, BER, uncorrected blocks, lock changes, re-tunes, dvr counters).
import type { FastifyInstance } from 'fastify';
import { dvbAdapterRegistry } from '../../drivers/dvb-adapter/registry.ts';
import { HttpError } from '../../errors.ts';
import type { AppContext } from '../context.ts';

const adapterSchema = { type: 'object', additionalProperties: true } as const;

export async function dvbRoutes(app: FastifyInstance, opts: { ctx: AppContext }): Promise<void> {
  const registry = () => dvbAdapterRegistry(opts.ctx.services);
  app.get('/data/dvb-adapter', {
    schema: {
      tags: ['data'],
      summary: 'Runtime state of every running tuner adapter',
      response: { 200: { type: 'array', items: adapterSchema } },
    },
    handler: async () =>
      registry()
        .all()
        .map((a) => ({ key: a.key, ...a.status() })),
  });
  app.get('/data/dvb-adapter/:id', {
    schema: {
      tags: ['data'],
      summary: 'Runtime state of one tuner adapter, by id, resource key or name',
      params: { type: 'object', properties: { id: { type: 'string' } }, required: ['id'] },
      response: { 200: adapterSchema },
    },
    handler: async (req) => {
      const { id } = req.params as { id: string };
      const a = registry().find(id);
      if (!a) throw new HttpError('NOT_FOUND', `no running tuner adapter ${id}`);
      return { key: a.key, ...a.status() };
    },
  });
}
