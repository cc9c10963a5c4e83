// Access control for the admin server: loopback is anonymous admin, everyone else signs in
// with HTTP Digest as a `user` from the config; viewers may only read runtime data.
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import type { Role, UserTable } from '../../drivers/users-table.ts';
import type { Clock } from '../../util/clock.ts';
import { localRequest } from '../../util/loopback.ts';
import { UI_ROUTE_PREFIX } from '../../web/paths.ts';
import { sendError } from '../errors.ts';
import { type DigestAlgorithm, DigestAuthenticator } from './digest.ts';

declare module 'fastify' {
  interface FastifyContextConfig {
    /** `public`: no authentication at all (OTT playback). Default: Digest or loopback. */
    access?: 'public';
  }
  interface FastifyRequest {
    /** Who made the request; set by the auth hook (undefined on public routes). */
    principal?: Principal;
  }
}

export interface Principal {
  /** Login, or undefined for an anonymous loopback request. */
  login?: string;
  role: Role;
}

export interface AuthOptions {
  users: UserTable;
  clock: Clock;
  /** Realm and nonce lifetime until `settings` gives others. */
  realm: string;
  nonceLifetimeSec: number;
  algorithms?: readonly DigestAlgorithm[];
  /** The config's current `http-server.realm` and `nonce-lifetime-sec`, read at each request
   *  (undefined while no http-server record is applied). */
  settings?: () => { realm: string; nonceLifetimeSec: number } | undefined;
}

/** Remote addresses that count as the local machine (spec 2: 127.0.0.1 only). */
/** Paths a viewer may read (GET/HEAD). */
const VIEWER_PREFIXES = ['/data/', '/schema/', `${UI_ROUTE_PREFIX}/`];
const VIEWER_PATHS = new Set(['/data', '/metrics', '/openapi.json']);
const READ_METHODS = new Set(['GET', 'HEAD']);

/** True when a viewer may make this request; `path` is the matched route pattern if any. */
export function viewerMayAccess(method: string, path: string): boolean {
  if (!READ_METHODS.has(method)) return false;
  return VIEWER_PATHS.has(path) || VIEWER_PREFIXES.some((p) => path.startsWith(p));
}

/** Register the auth hook on `app` (the root instance, so it covers every route). */
export function installAuth(app: FastifyInstance, opts: AuthOptions): DigestAuthenticator {
  const digest = new DigestAuthenticator({
    realm: opts.realm,
    clock: opts.clock,
    lifetimeSec: opts.nonceLifetimeSec,
    algorithms: opts.algorithms,
    password: (login) => opts.users.get(login)?.password,
  });

  const challenge = (reply: FastifyReply, stale: boolean, message: string) => {
    reply.header('www-authenticate', digest.challenges(stale));
    return sendError(reply, 401, message);
  };

  /** Follow the config: a changed realm or lifetime applies from the next request. */
  const follow = () => {
    const s = opts.settings?.();
    if (s && (s.realm !== digest.realm || s.nonceLifetimeSec !== digest.lifetimeSec)) {
      digest.configure({ realm: s.realm, lifetimeSec: s.nonceLifetimeSec });
    }
  };

  app.addHook('onRequest', async (req: FastifyRequest, reply: FastifyReply) => {
    if (req.routeOptions.config?.access === 'public') return;
    follow();
    // The socket's peer, never a forwarded header: trustProxy is off and we do not ask req.ip.
    // A proxy on this machine, or sluice's own fetch, is not local admin (src/util/loopback.ts).
    const socket = req.raw.socket;
    const remote = socket?.remoteAddress ?? '';
    const header = req.headers.authorization;
    if (header === undefined && socket && localRequest(socket, req.headers)) {
      req.principal = { role: 'admin' };
      return;
    }
    if (header === undefined) return challenge(reply, false, 'Authentication required');
    // The URL the client signed: before the dashboard's rewrite (app.ts), if any.
    const result = digest.verify(req.method, req.originalUrl, header);
    if (!result.ok) {
      req.log.info({ remote, reason: result.reason }, 'digest authentication refused');
      return challenge(reply, result.stale, result.stale ? 'Nonce expired' : 'Unauthorized');
    }
    const user = opts.users.get(result.login);
    if (!user) return challenge(reply, false, 'Unauthorized');
    req.principal = { login: user.login, role: user.role };
    if (user.role === 'admin') return;
    const path = req.routeOptions.url ?? req.url.split('?')[0] ?? '';
    if (!viewerMayAccess(req.method, path)) {
      return sendError(reply, 403, `Role ${user.role} may not ${req.method} ${path}`);
    }
  });
  return digest;
}
