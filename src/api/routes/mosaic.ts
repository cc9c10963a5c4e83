// GET /data/mosaic.jpg: the grid of every stream's thumbnail (docs/mosaic.md). Protected like
// every /data route (viewers may read it).
import type { FastifyInstance } from 'fastify';
import { MOSAIC_SERVICE } from '../../drivers/mosaic.ts';
import { HttpError } from '../../errors.ts';
import type { AppContext } from '../context.ts';

export async function mosaicRoutes(app: FastifyInstance, opts: { ctx: AppContext }): Promise<void> {
  app.get('/data/mosaic.jpg', {
    schema: {
      tags: ['data'],
      summary: 'The mosaic: every stream thumbnail in one JPEG grid (mosaic.columns per row)',
      produces: ['image/jpeg'],
    },
    handler: async (_req, reply) => {
      const mosaic = opts.ctx.services.get(MOSAIC_SERVICE);
      if (!mosaic) throw new HttpError('NOT_FOUND', 'the mosaic is off (mosaic.enable)');
      const jpeg = await mosaic.image();
      return reply.type('image/jpeg').header('Cache-Control', 'no-cache').send(jpeg);
    },
  });
}
