// GET /.well-known/acme-challenge/{token}: the HTTP-01 answers of the ACME order in progress
// (docs/fleet.md). Public, as the CA asks anonymously; unknown tokens are 404.
import type { FastifyInstance } from 'fastify';
import { ACME_SERVICE } from '../../drivers/acme.ts';
import { HttpError } from '../../errors.ts';
import type { AppContext } from '../context.ts';

export async function acmeRoutes(app: FastifyInstance, opts: { ctx: AppContext }): Promise<void> {
  app.get('/.well-known/acme-challenge/:token', {
    config: { access: 'public' },
    schema: {
      tags: ['data'],
      summary: 'ACME HTTP-01 challenge answer (certificate automation)',
      params: { type: 'object', properties: { token: { type: 'string' } }, required: ['token'] },
    },
    handler: async (req, reply) => {
      const { token } = req.params as { token: string };
      const answer = opts.ctx.services.get(ACME_SERVICE)?.challenges.get(token);
      if (answer === undefined) throw new HttpError('NOT_FOUND', 'no such ACME challenge');
      return reply.type('text/plain').send(answer);
    },
  });
}
