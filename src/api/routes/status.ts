// GET /data/status: where the config comes from, what the reconcile loop did with it, and the
// settings the current config sets that this build does not act on yet.
import type { FastifyInstance } from 'fastify';
import { notYetUsed } from '../../drivers/not-yet-used.ts';
import type { AppContext } from '../context.ts';

export async function statusRoutes(app: FastifyInstance, opts: { ctx: AppContext }): Promise<void> {
  const { ctx } = opts;
  app.get('/data/status', {
    schema: {
      tags: ['data'],
      summary:
        'Config source, revision, last apply result, last error, per-resource status, settings not used yet',
      response: {
        200: {
          type: 'object',
          additionalProperties: true,
          properties: {
            source: { type: 'object', additionalProperties: true },
            notYetUsed: {
              description:
                'Settings the current config sets that this build accepts but does not act on yet',
              type: 'array',
              items: {
                type: 'object',
                required: ['pointer', 'setting', 'reason'],
                properties: {
                  pointer: { type: 'string', description: 'JSON pointer into the config' },
                  setting: { type: 'string' },
                  reason: { type: 'string' },
                },
              },
            },
          },
        },
      },
    },
    handler: () => {
      const loop = ctx.loop.status();
      return {
        source: ctx.config.sourceInfo(),
        ...(typeof loop === 'object' ? loop : {}),
        notYetUsed: notYetUsed(ctx.config.current().doc),
      };
    },
  });
}

/**
 * GET /data/ready: 200 once a config has been applied, 503 before — for load balancers and
 * Kubernetes readiness probes, which cannot sign in with Digest: public, and it tells nothing
 * but readiness, the applied revision and the node (docs/fleet.md, "Deployment").
 */
export async function readyRoutes(app: FastifyInstance, opts: { ctx: AppContext }): Promise<void> {
  app.get('/data/ready', {
    config: { access: 'public' },
    schema: { tags: ['data'], summary: 'Readiness: 200 once a config is applied, else 503' },
    handler: async (_req, reply) => {
      const st = opts.ctx.loop.status() as { revision?: string; node?: { name: string } };
      const ready = !!st.revision;
      return reply.code(ready ? 200 : 503).send({
        ready,
        revision: st.revision ?? '',
        ...(st.node ? { node: st.node.name } : {}),
      });
    },
  });
}
