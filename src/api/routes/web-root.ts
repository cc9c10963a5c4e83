// GET / — where a person or a client lands on the admin port: a browser is sent to the dashboard
// (302 to `web-server.ui-path`); a client asking for JSON, or anyone while the dashboard is off,
// gets a short index of where things are (docs/web.md, "The root path").
import type { FastifyInstance, FastifyRequest } from 'fastify';
import { WEB_UI_SERVICE } from '../../drivers/web-server.ts';
import type { AppContext } from '../context.ts';

/** The places the index names, each with what it is. */
const INDEX_LINKS: Readonly<Record<string, string>> = {
  '/data/status': 'the server and every resource: state and message',
  '/config': 'the configuration (GET, PATCH, PUT; docs/api.md)',
  '/metrics': 'Prometheus metrics',
  '/openapi.json': 'every path of this API',
};

/** True when the client asks for JSON rather than a page (an API client's Accept header). */
function wantsJson(req: FastifyRequest): boolean {
  const accept = req.headers.accept ?? '';
  return accept.includes('application/json') && !accept.includes('text/html');
}

export async function webRootRoute(app: FastifyInstance, opts: { ctx: AppContext }) {
  const { ctx } = opts;
  app.get('/', {
    // Nothing behind it is secret: the redirect and the links lead to pages that sign in.
    config: { access: 'public' },
    schema: {
      tags: ['data'],
      summary:
        'The dashboard (302 to web-server.ui-path) for a browser; a JSON index of the API for a ' +
        'client asking for JSON or while the dashboard is off',
    },
    handler: (req, reply) => {
      const ui = ctx.services.get(WEB_UI_SERVICE);
      if (ui && !wantsJson(req)) return reply.redirect(ui.uiPath, 302);
      const links: Record<string, string> = { ...INDEX_LINKS };
      if (ui) links[ui.uiPath] = 'the dashboard';
      return reply.header('cache-control', 'no-cache').send({
        service: 'sluice',
        dashboard: ui?.uiPath ?? null,
        ...(ui
          ? {}
          : { hint: 'the dashboard is off: set web-server.enable to true (docs/web.md)' }),
        links,
      });
    },
  });
}
