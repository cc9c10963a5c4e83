// Who may act anonymously: a request whose socket peer is this machine (127.0.0.1), unless a
// proxy on this machine forwarded it for someone else, or sluice sent it itself. A cache on the
// same host (docs/fleet.md, "Behind a cache") connects from 127.0.0.1 but its headers say the
// request is not local; sluice's own fetches (an input following a playlist, a webhook) come
// from 127.0.0.1 too but on a connection it opened (src/util/own-sockets.ts). Headers are never
// trusted the other way: they never make a remote peer local.
import type { IncomingHttpHeaders } from 'node:http';
import { type Endpoints, fromOwnClient } from './own-sockets.ts';

export type { Endpoints };

/** Socket peers that are this machine. */
export const LOOPBACK_ADDRESSES: ReadonlySet<string> = new Set(['127.0.0.1', '::ffff:127.0.0.1']);

/** Headers a proxy adds to say whom it forwards for (RFC 7239 and the customary ones). */
const FORWARDING_HEADERS = ['forwarded', 'x-forwarded-for', 'x-real-ip', 'via'] as const;

/** True when the request came through a proxy: it carries one of the forwarding headers. */
export function proxied(headers: IncomingHttpHeaders): boolean {
  for (const h of FORWARDING_HEADERS) if (headers[h] !== undefined) return true;
  return false;
}

/** True for a request on `conn` (the socket it came on) from this machine that no proxy
 *  forwarded and that this process did not send itself. */
export function localRequest(conn: Endpoints, headers: IncomingHttpHeaders): boolean {
  return (
    LOOPBACK_ADDRESSES.has(conn.remoteAddress ?? '') && !proxied(headers) && !fromOwnClient(conn)
  );
}
