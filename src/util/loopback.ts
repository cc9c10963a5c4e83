// Who may act anonymously: a request whose socket peer is this machine (127.0.0.1), unless a
// proxy on this machine forwarded it for someone else, or sluice sent it itself. A cache on the
// same host (docs/fleet.md, "Behind a cache") connects from 127.0.0.1 but its headers say the
// request is not local; sluice's own fetches (an input following a playlist, a webhook) come
// from 127.0.0.1 too but on a connection it opened (src/util/own-sockets.ts). Headers are never
// trusted the other way: they never make a remote peer local. A browser on this machine is
// local too, so a page of another site must not reach us through a name of its own that it
// re-points at 127.0.0.1 (DNS rebinding): an anonymous request names us by an address or
// `localhost` in its Host header.
import type { IncomingHttpHeaders } from 'node:http';
import { isIP } from 'node:net';
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

/** Host names a local tool uses for this machine; any address literal is fine as well. */
const LOCAL_NAMES: ReadonlySet<string> = new Set(['localhost', 'localhost.']);

/** True when `host` (a Host header, port included) names this machine by an address or as
 *  `localhost`: not a DNS name someone else controls. No Host at all (HTTP/1.0) is a tool, not
 *  a browser. */
export function hostIsLocalName(host: string | undefined): boolean {
  if (host === undefined) return true;
  const h = host.trim().toLowerCase();
  if (h.startsWith('[')) return h.indexOf(']') > 1; // an IPv6 literal, with or without a port
  const name = h.replace(/:\d*$/, '');
  return LOCAL_NAMES.has(name) || isIP(name) !== 0;
}

/** True for a request on `conn` (the socket it came on) from this machine that no proxy
 *  forwarded, that this process did not send itself, and that names this machine by an
 *  address or `localhost` (not by a name that may be rebound). */
export function localRequest(conn: Endpoints, headers: IncomingHttpHeaders): boolean {
  return (
    LOOPBACK_ADDRESSES.has(conn.remoteAddress ?? '') &&
    !proxied(headers) &&
    hostIsLocalName(headers.host) &&
    !fromOwnClient(conn)
  );
}
