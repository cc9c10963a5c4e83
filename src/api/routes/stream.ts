// GET /data/stream and /data/stream/{id}: runtime state of the streams (state, active input,
// per-input status, bitrates, TR 101 290 counters, programmes, switch log, alerts).
import type { FastifyInstance } from 'fastify';
import { streamRegistry } from '../../drivers/stream/registry.ts';
import type { RunningStream } from '../../drivers/stream/running.ts';
import { HttpError } from '../../errors.ts';
import type { AppContext } from '../context.ts';
import { streamMemoryBytes } from '../metrics-process.ts';
import { isPaged, MAX_PAGE, type StreamQuery, selectStreams } from '../stream-page.ts';

const streamSchema = { type: 'object', additionalProperties: true } as const;

const streamQuery = {
  type: 'object',
  properties: {
    name: {
      type: 'string',
      description: 'only streams whose stream-name contains this (any case)',
    },
    ids: {
      type: 'string',
      pattern: '^[0-9]+(,[0-9]+)*$',
      description: 'only the streams with these ids, comma-separated: 1,2,3',
    },
    limit: {
      type: 'integer',
      minimum: 1,
      maximum: MAX_PAGE,
      description: 'answer a page of at most this many streams, in resource-key order',
    },
    after: {
      type: 'string',
      minLength: 1,
      description: 'the page after this resource key: the `next` of the previous page',
    },
  },
} as const;

const pageSchema = {
  type: 'object',
  required: ['streams', 'next'],
  properties: {
    streams: { type: 'array', items: streamSchema },
    next: {
      type: 'string',
      nullable: true,
      description: 'the `after` of the next page; null on the last page',
    },
  },
} as const;

export async function streamRoutes(app: FastifyInstance, opts: { ctx: AppContext }): Promise<void> {
  const registry = () => streamRegistry(opts.ctx.services);
  // memoryBytes: what its live segment stores hold (sluice_stream_memory_bytes, docs/api.md).
  const row = (s: RunningStream) => ({
    key: s.key,
    ...s.status(),
    memoryBytes: s.memoryBytes?.() ?? streamMemoryBytes(opts.ctx.services, s.name),
  });
  app.get('/data/stream', {
    schema: {
      tags: ['data'],
      summary:
        'Runtime state of the running streams: all of them, or those of `name` / `ids`, or one page (`limit`, `after`)',
      querystring: streamQuery,
      response: { 200: { anyOf: [{ type: 'array', items: streamSchema }, pageSchema] } },
    },
    handler: async (req) => {
      const q = req.query as StreamQuery;
      const { streams, next } = selectStreams(registry().all(), q);
      const rows = streams.map((s) => row(s));
      return isPaged(q) ? { streams: rows, next } : rows;
    },
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
      return row(s);
    },
  });
}
