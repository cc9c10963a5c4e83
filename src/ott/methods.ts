// Which HTTP methods may reach a stream's media handlers: GET and HEAD, nothing else. The OTT
// route asks `delivers` before billing or any handler runs; OPTIONS gets the CORS preflight from
// `answerOtherMethod` and never a media byte (docs/ott.md, "Serving").
import { sendError } from './http.ts';
import type { OttReply, OttRequest } from './request.ts';

/** What the HTTP layer hands over before the method is judged: an OttRequest of any method. */
export type AnyMethodRequest = Omit<OttRequest, 'method'> & { readonly method: string };

/** The methods the OTT route takes: the delivering ones, and OPTIONS for browser players. */
export const OTT_ROUTE_METHODS = ['GET', 'HEAD', 'OPTIONS'];

/** Answered in the preflight; a player on another origin asks for ranges of segments. */
const ALLOWED_METHODS = 'GET, HEAD';
const ALLOWED_HEADERS = 'Range';
/** A browser may reuse a preflight this long (s); the answer never changes. */
const PREFLIGHT_MAX_AGE = '86400';

/** The one rule: only GET and HEAD may deliver. Narrows to the OttRequest handlers take. */
export function delivers(req: AnyMethodRequest): req is OttRequest {
  return req.method === 'GET' || req.method === 'HEAD';
}

/**
 * The answer to a request `delivers` refused: for OPTIONS (a CORS preflight or not) 204 with the
 * CORS headers and no body; anything else 405. Never calls a stream handler.
 */
export function answerOtherMethod(req: AnyMethodRequest, reply: OttReply): OttReply {
  reply.header('Allow', `${ALLOWED_METHODS}, OPTIONS`);
  if (req.method !== 'OPTIONS') {
    const path = req.url.split('?')[0];
    return sendError(
      reply,
      405,
      `${req.method} is not allowed on ${path}: playback takes GET or HEAD`,
    );
  }
  reply.header('Access-Control-Allow-Origin', '*');
  reply.header('Access-Control-Allow-Methods', ALLOWED_METHODS);
  reply.header('Access-Control-Allow-Headers', ALLOWED_HEADERS);
  reply.header('Access-Control-Max-Age', PREFLIGHT_MAX_AGE);
  return reply.code(204).send();
}
