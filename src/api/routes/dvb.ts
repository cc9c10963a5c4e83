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
  app.post('/data/dvb-adapter/:id/scan', {
    schema: {
      tags: ['data'],
      summary:
        'Start a scan on a scanner adapter (mode 1) from the given transponders (tuning members of the adapter record); the results show at /data/dvb-adapter/{id}',
      params: { type: 'object', properties: { id: { type: 'string' } }, required: ['id'] },
      body: {
        type: 'object',
        required: ['transponders'],
        additionalProperties: false,
        properties: {
          transponders: { type: 'array', minItems: 1, items: transponderSchema },
        },
      },
      response: { 202: adapterSchema },
    },
    handler: async (req, reply) => {
      const { id } = req.params as { id: string };
      const a = registry().find(id);
      if (!a) throw new HttpError('NOT_FOUND', `no running tuner adapter ${id}`);
      const { transponders } = req.body as { transponders: Record<string, number>[] };
      const refused = a.scan(transponders);
      if (refused) throw new HttpError('CONFLICT', refused);
      return reply.code(202).send({ key: a.key, ...a.status() });
    },
  });
}

const int = { type: 'integer' } as const;
/** The tuning members of spec 1's adapter record a scan starts from. */
const transponderSchema = {
  type: 'object',
  required: ['freq'],
  additionalProperties: false,
  properties: {
    type: { enum: [1, 2, 3, 5, 6, 16, 18] },
    freq: { type: 'integer', minimum: 1 },
    'symbol-rate': int,
    fec: int,
    modulation: int,
    'spectral-inversion': int,
    'lnb-polarization': { enum: [0, 1] },
    bandwidth: int,
    'transmission-mode': int,
    'guard-interval': int,
    'hierarchy-information': int,
    'dvb-stream-id': int,
  },
} as const;
