// Who may act anonymously: a request whose socket peer is this machine (127.0.0.1), unless a
// proxy on this machine forwarded it for someone else. A cache or load balancer in front of
// sluice on the same host (docs/fleet.md, "Behind a cache") connects from 127.0.0.1; the
// headers it adds say the request is not local, so the admin API, the EPG server and playback
// judge it like any remote one. The headers are never trusted the other way: they never make a
// remote peer local, and the address they name is not used.
import type { IncomingHttpHeaders } from 'node:http';

/** Socket peers that are this machine. */
export const LOOPBACK_ADDRESSES: ReadonlySet<string> = new Set(['127.0.0.1', '::ffff:127.0.0.1']);

/** Headers a proxy adds to say whom it forwards for (RFC 7239 and the customary ones). */
const FORWARDING_HEADERS = ['forwarded', 'x-forwarded-for', 'x-real-ip', 'via'] as const;

/** True when the request came through a proxy: it carries one of the forwarding headers. */
export function proxied(headers: IncomingHttpHeaders): boolean {
  for (const h of FORWARDING_HEADERS) if (headers[h] !== undefined) return true;
  return false;
}

/** True for a request from this machine that no proxy forwarded. */
export function localRequest(ip: string, headers: IncomingHttpHeaders): boolean {
  return LOOPBACK_ADDRESSES.has(ip) && !proxied(headers);
}
