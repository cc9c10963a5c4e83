// Route plugins other parts add to the admin server (e.g. /data/stream, /data/epg/channel).
// Each part appends one line; buildApp registers them in this order with `{ ctx }`.
import type { FastifyPluginAsync } from 'fastify';
import type { AppContext } from '../context.ts';
import { acmeRoutes } from './acme.ts';
import { alertRoutes } from './alerts.ts';
import { dvbRoutes } from './dvb.ts';
import { dvrRoutes } from './dvr.ts';
import { epgRoutes } from './epg.ts';
import { mosaicRoutes } from './mosaic.ts';
import { sessionRoutes } from './sessions.ts';
import { readyRoutes } from './status.ts';
import { streamRoutes } from './stream.ts';
import { webRoutes } from './web.ts';

export type ApiPlugin = FastifyPluginAsync<{ ctx: AppContext }>;

export const apiPlugins: ApiPlugin[] = [
  epgRoutes,
  streamRoutes,
  dvrRoutes,
  mosaicRoutes,
  sessionRoutes,
  acmeRoutes,
  readyRoutes,
  alertRoutes,
  webRoutes,
  dvbRoutes,
];
