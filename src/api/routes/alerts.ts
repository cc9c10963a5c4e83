// GET /data/alerts (active alerts and the recent history) and GET /data/alerts/events (the
// alert events as Server-Sent Events, for the dashboard): docs/alerting.md. Viewers may read.
import type { FastifyInstance } from 'fastify';
import type { AlertEvent } from '../../alerting/types.ts';
import { ALERTER_SERVICE } from '../../drivers/alerter.ts';
import type { AppContext } from '../context.ts';

const anyObject = { type: 'object', additionalProperties: true } as const;
/** Unsent bytes above which an events client is too slow and is disconnected (it reconnects
 *  and gets the active list again): the server never queues without bound for it. */
export const SSE_MAX_BACKLOG = 1 << 20;
/** A comment line this often keeps proxies from closing an idle events stream. */
export const SSE_HEARTBEAT_MS = 15_000;

function sse(event: string, data: unknown, id?: number): string {
  return `${id !== undefined ? `id: ${id}\n` : ''}event: ${event}\ndata: ${JSON.stringify(data)}\n\n`;
}

export async function alertRoutes(app: FastifyInstance, opts: { ctx: AppContext }): Promise<void> {
  const alerter = () => opts.ctx.services.get(ALERTER_SERVICE);
  app.get('/data/alerts', {
    schema: {
      tags: ['data'],
      summary: 'Active alerts and the recent raise / repeat / clear events, newest first',
      querystring: {
        type: 'object',
        properties: { limit: { type: 'integer', minimum: 0 } },
        additionalProperties: false,
      },
      response: { 200: anyObject },
    },
    handler: async (req) => {
      const { limit } = req.query as { limit?: number };
      const a = alerter();
      if (!a) return { enabled: false, active: [], recent: [] };
      return {
        enabled: a.enabled,
        active: a.active(),
        recent: a.recent(limit),
        webhook: { ...a.webhookStats },
      };
    },
  });
  app.get('/data/alerts/events', {
    schema: {
      tags: ['data'],
      summary:
        'Alert events as Server-Sent Events: `active` (the list) first, then `raise`, `repeat`, `clear`',
      produces: ['text/event-stream'],
    },
    handler: (req, reply) => {
      // HEAD: the headers alone (the stream would otherwise hold the connection open).
      if (req.method === 'HEAD') return reply.type('text/event-stream; charset=utf-8').send();
      reply.hijack();
      const res = reply.raw;
      res.writeHead(200, {
        'content-type': 'text/event-stream; charset=utf-8',
        'cache-control': 'no-cache',
        connection: 'keep-alive',
        'x-accel-buffering': 'no',
      });
      const a = alerter();
      res.write(`retry: 3000\n\n${sse('active', a?.active() ?? [])}`);
      const send = (ev: AlertEvent) => {
        if (res.writableLength > SSE_MAX_BACKLOG) {
          res.destroy();
          return;
        }
        res.write(sse(ev.event, ev, ev.seq));
      };
      const off = a?.feed.subscribe(send);
      const beat = opts.ctx.clock.setInterval(() => res.write(': ping\n\n'), SSE_HEARTBEAT_MS);
      const done = () => {
        off?.();
        beat.cancel();
      };
      req.raw.once('close', done);
      res.once('close', done);
    },
  });
}
