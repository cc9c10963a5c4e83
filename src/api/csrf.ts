// The admin API's guard against changes a page of another site makes in a signed-in operator's
// name (CSRF): a request of any method but GET, HEAD and OPTIONS must come from the API's own
// origin and be one no browser sends across origins without a CORS preflight, which this server
// never grants. One hook for every route; the rule and its reasons: docs/api.md.
import type { FastifyInstance, FastifyRequest } from 'fastify';
import { HttpError } from '../errors.ts';

const READ_METHODS = new Set(['GET', 'HEAD', 'OPTIONS']);
/** Body types a page may send to any origin without a preflight (the Fetch standard's
 *  CORS-safelisted ones): refused on every change, whoever sends them. */
export const SIMPLE_BODY_TYPES: ReadonlySet<string> = new Set([
  'text/plain',
  'application/x-www-form-urlencoded',
  'multipart/form-data',
]);
/** A header no page may add across origins without a preflight: what a POST without a JSON body
 *  (e.g. POST /xmltv/reset-cache) carries instead. The dashboard sends it on every change. */
export const CHANGE_HEADER = 'X-Sluice-Request';
/** `Sec-Fetch-Site` of a request from the API's own pages, or of the user's own doing. */
const OWN_SITE = new Set(['same-origin', 'none']);
const WHY =
  'a page of another site could otherwise make it in your name (docs/api.md, "Changes from browsers")';

/** Refuse, before the body is read, every change that fails the rule. */
export function installChangeGuard(app: FastifyInstance): void {
  app.addHook('onRequest', async (req) => {
    const refused = changeRefusal(req);
    if (refused) throw refused;
  });
}

/** Why `req` may not change anything, or undefined when it may (or changes nothing). */
export function changeRefusal(req: FastifyRequest): HttpError | undefined {
  // No route (404, 405): nothing can change, and the answer says what the path takes.
  if (READ_METHODS.has(req.method) || req.routeOptions.url === undefined) return undefined;
  const what = `${req.method} ${req.url.split('?')[0]}`;
  const site = header(req, 'sec-fetch-site');
  if (site !== undefined && !OWN_SITE.has(site)) {
    return new HttpError(
      'FORBIDDEN',
      `${what} from a page of another origin (Sec-Fetch-Site: ${site}) is refused: ${WHY}`,
    );
  }
  const origin = header(req, 'origin');
  const own = ownOrigin(req);
  // A browser that says the page is of this origin is believed: a proxy in front may have
  // rewritten Host, so Origin alone would refuse the API's own dashboard.
  if (
    origin !== undefined &&
    site !== 'same-origin' &&
    (own === undefined || originOf(origin) !== own)
  ) {
    return new HttpError(
      'FORBIDDEN',
      `${what} from another origin (Origin: ${origin}) is refused: only ${own ?? 'this server'} may change it; ${WHY}`,
    );
  }
  const type = header(req, 'content-type')?.split(';')[0]?.trim().toLowerCase();
  if (type && SIMPLE_BODY_TYPES.has(type)) {
    return new HttpError(
      'UNSUPPORTED_MEDIA_TYPE',
      `Content-Type ${type} is not accepted on ${what}: a change takes a JSON body (application/json), or none with the header ${CHANGE_HEADER}: 1; ${WHY}`,
    );
  }
  if (!type && req.method === 'POST' && header(req, CHANGE_HEADER.toLowerCase()) === undefined) {
    return new HttpError(
      'FORBIDDEN',
      `${what} without a body must carry the header ${CHANGE_HEADER}: 1 (or send a JSON body); ${WHY}`,
    );
  }
  return undefined;
}

function header(req: FastifyRequest, name: string): string | undefined {
  const v = req.headers[name];
  const s = Array.isArray(v) ? v.join(',') : v;
  return s === undefined || s.trim() === '' ? undefined : s.trim();
}

/** This server's origin as the request names it: its scheme and its Host header. */
function ownOrigin(req: FastifyRequest): string | undefined {
  const host = header(req, 'host');
  return host === undefined ? undefined : originOf(`${req.protocol}://${host}`);
}

/** The serialised origin of `url` (default port dropped, host lower-cased); undefined for
 *  `null` (a sandboxed page, a file) and for anything unparsable. */
function originOf(url: string): string | undefined {
  try {
    const origin = new URL(url).origin;
    return origin === 'null' ? undefined : origin;
  } catch {
    return undefined;
  }
}
