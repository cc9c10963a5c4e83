// The `http-server` driver: owns the admin/OTT listeners (HTTP on `port`, HTTPS on `https-port`
// when `certificate` and `private-key` are set). Requests go to the handler the server
// publishes as the `admin-handler` service (a Fastify app built with a serverFactory).
import { existsSync } from 'node:fs';
import { readFile } from 'node:fs/promises';
import http, { type IncomingMessage, type ServerResponse } from 'node:http';
import https from 'node:https';
import type { AddressInfo } from 'node:net';
import type { Resource } from '../config/types.ts';
import { ottCachePolicy } from '../ott/cache-policy.ts';
import { LIVE_DELIVERY_SERVICE } from '../ott/live-publish.ts';
import {
  DriverError,
  type Host,
  type Instance,
  type KindDriver,
  type ResourceStatus,
  type SpecOf,
} from '../reconciler/driver.ts';
import { moveListener } from '../util/listener-move.ts';
import { ServiceKey } from '../util/services.ts';
import { ACME_SERVICE, HTTPS_REFRESH_SERVICE } from './acme.ts';
import { PORT_OVERRIDES_SERVICE, portAdvice } from './port-overrides.ts';
import { TlsFiles } from './tls-files.ts';

export const ADMIN_HANDLER_SERVICE = new ServiceKey<RequestHandler>('admin-handler');
export type RequestHandler = (req: IncomingMessage, res: ServerResponse) => void;

/** The admin API's Digest settings from the record (`realm`, `nonce-lifetime-sec`): the
 *  driver publishes them on every create and update; the API's auth reads them per request. */
export interface AdminAuthSettings {
  realm: string;
  nonceLifetimeSec: number;
}
export const ADMIN_AUTH_SERVICE = new ServiceKey<AdminAuthSettings>('admin-auth');
type Spec = SpecOf<'http-server'>;

function authSettings(spec: Spec): AdminAuthSettings {
  return { realm: spec.realm, nonceLifetimeSec: spec['nonce-lifetime-sec'] };
}

/** What one listener should be; equal targets mean the running listener stays. */
interface Target {
  bind: string;
  port: number;
  cert?: string;
  key?: string;
  /** Plain HTTP only: new connections go through the native live engine first. */
  native?: boolean;
}

interface Listener {
  target: Target;
  server: http.Server | https.Server;
  /** Undoes the native engine's hold on the listener's connections. */
  detach?: () => void;
  /** HTTPS: its certificate files, reloaded on change. */
  tls?: TlsFiles;
}

function targets(
  spec: Spec,
  portOverride: number | undefined,
  acme: { cert: string; key: string } | undefined,
): { http: Target; https?: Target } {
  const bind = spec['bind-address'];
  const port = portOverride ?? spec.port;
  const out: { http: Target; https?: Target } = {
    http: { bind, port, native: spec['native-delivery'] },
  };
  const cert = spec.certificate;
  const key = spec['private-key'];
  if (cert && key) out.https = { bind, port: spec['https-port'], cert, key };
  // No files of its own: the ACME certificate, once there is one (docs/fleet.md).
  else if (acme && existsSync(acme.cert) && existsSync(acme.key))
    out.https = { bind, port: spec['https-port'], cert: acme.cert, key: acme.key };
  return out;
}

function sameTarget(a: Target | undefined, b: Target | undefined): boolean {
  return (
    a?.bind === b?.bind &&
    a?.port === b?.port &&
    a?.cert === b?.cert &&
    a?.key === b?.key &&
    a?.native === b?.native
  );
}

function addressOf(server: http.Server): string {
  const a = server.address() as AddressInfo | null;
  if (!a) return '';
  return a.family === 'IPv6' ? `[${a.address}]:${a.port}` : `${a.address}:${a.port}`;
}

/** The setting and the `sluice serve` flag that move each listener's port. */
const PORT_SETTINGS = {
  HTTP: { setting: 'http-server.port', flag: '--port' },
  HTTPS: { setting: 'http-server.https-port', flag: '' },
} as const;

function listenError(
  e: NodeJS.ErrnoException,
  t: Target,
  proto: keyof typeof PORT_SETTINGS,
  fromFlag: boolean,
): DriverError {
  const where = `${proto} ${t.bind}:${t.port}`;
  switch (e.code) {
    case 'EADDRINUSE': {
      // One line that says what to do: which setting (or flag) moves the port.
      const { setting, flag } = PORT_SETTINGS[proto];
      const advice = flag
        ? portAdvice(setting, flag, fromFlag)
        : `set ${setting} in the config to a free port`;
      return new DriverError(`${where}: the port is in use by another program; ${advice}`, true);
    }
    case 'EADDRNOTAVAIL':
      return new DriverError(`${where}: the address is not configured on this host`, true);
    case 'EACCES':
      return new DriverError(
        `${where}: permission denied (ports below 1024 need privileges)`,
        false,
      );
    default:
      return new DriverError(`${where}: ${e.message}`, true);
  }
}

async function readPem(path: string, what: string): Promise<Buffer> {
  try {
    return await readFile(path);
  } catch (e) {
    const err = e as NodeJS.ErrnoException;
    // A missing file may still arrive (certificate automation); retry it.
    throw new DriverError(`cannot read the ${what} ${path}: ${err.code ?? err.message}`, true);
  }
}

class HttpServerInstance implements Instance<Spec> {
  private http?: Listener;
  private https?: Listener;
  private closed = false;

  private spec: Spec | undefined;
  /** Why the last change of the listeners failed ('' when it did not): status says so. */
  private failure = '';

  constructor(private readonly host: Host) {
    // A certificate issued (ACME) while this runs: HTTPS starts or moves to it.
    host.services.set(HTTPS_REFRESH_SERVICE, () => {
      if (this.closed || !this.spec) return;
      this.ensure(this.spec).catch((err) => host.log.warn({ err }, 'HTTPS not started'));
    });
  }

  private readonly handle = (req: IncomingMessage, res: ServerResponse): void => {
    const h = this.host.services.get(ADMIN_HANDLER_SERVICE);
    if (typeof h === 'function') {
      h(req, res);
      return;
    }
    // The API is wired after the listener may already be up: answer plainly until it is.
    res.writeHead(503, { 'content-type': 'application/json' });
    res.end(JSON.stringify({ status: 503, message: 'Service Unavailable' }));
  };

  /** Bring the listeners to what `spec` asks, touching only those that differ. */
  async ensure(spec: Spec): Promise<void> {
    this.host.services.set(ADMIN_AUTH_SERVICE, authSettings(spec));
    ottCachePolicy(this.host.services).setSegmentMaxAge(spec['segment-cache-max-age']);
    const portOverride = this.host.services.get(PORT_OVERRIDES_SERVICE)?.http;
    const want = targets(spec, portOverride, this.host.services.get(ACME_SERVICE)?.files);
    this.spec = spec;
    const fromFlag = portOverride !== undefined;
    if (!sameTarget(this.http?.target, want.http)) {
      await this.move('http', want.http, (t) => this.openHttp(t, fromFlag));
    }
    if (!sameTarget(this.https?.target, want.https)) {
      await this.move('https', want.https, (t) => this.openHttps(t));
    }
  }

  /** Move one listener to `want` (undefined: none; src/util/listener-move.ts: the old serves
   *  until the new is bound). */
  private move(
    which: 'http' | 'https',
    want: Target | undefined,
    open: (t: Target) => Promise<Listener>,
  ): Promise<void> {
    const old = this[which];
    return moveListener({
      old,
      samePort: !!old && !!want && want.port !== 0 && old.target.port === want.port,
      open: async () => (want ? open(want) : undefined),
      reopen: () => open(old!.target),
      shut: (l) => this.shut(l),
      hold: (l) => {
        this[which] = l;
      },
    });
  }

  private async openHttp(t: Target, fromFlag: boolean): Promise<Listener> {
    const server = http.createServer(this.handle);
    const delivery = this.host.services.get(LIVE_DELIVERY_SERVICE);
    const detach = t.native ? delivery?.attach(server) : undefined;
    try {
      await this.listen(t, server, 'HTTP', fromFlag);
    } catch (e) {
      detach?.();
      throw e;
    }
    return { target: t, server, detach };
  }

  private async openHttps(t: Target): Promise<Listener> {
    // Both read at once; when both fail, the certificate's error is the one reported
    // (Promise.all would report whichever failed first, which varies from run to run).
    const [certRead, keyRead] = await Promise.allSettled([
      readPem(t.cert!, 'certificate'),
      readPem(t.key!, 'private key'),
    ]);
    if (certRead.status === 'rejected') throw certRead.reason;
    if (keyRead.status === 'rejected') throw keyRead.reason;
    const [cert, key] = [certRead.value, keyRead.value];
    let server: https.Server;
    try {
      server = https.createServer({ cert, key }, this.handle);
    } catch (e) {
      throw new DriverError(
        `HTTPS: the certificate or key is not usable: ${(e as Error).message}`,
        false,
      );
    }
    await this.listen(t, server, 'HTTPS', false);
    const tls = new TlsFiles(t.cert!, t.key!, server, this.host.log, cert);
    return { target: t, server, tls };
  }

  private listen<S extends http.Server>(
    t: Target,
    server: S,
    proto: 'HTTP' | 'HTTPS',
    fromFlag: boolean,
  ): Promise<S> {
    return new Promise((resolve, reject) => {
      const onError = (e: NodeJS.ErrnoException) => {
        server.close();
        reject(listenError(e, t, proto, fromFlag));
      };
      server.once('error', onError);
      server.listen(t.port, t.bind, () => {
        server.off('error', onError);
        server.on('error', (e) => this.host.log.error({ err: e }, `${proto} listener error`));
        this.host.log.info({ address: addressOf(server) }, `${proto} listening`);
        resolve(server);
      });
    });
  }

  private async stop(which: 'http' | 'https'): Promise<void> {
    const l = this[which];
    if (!l) return;
    this[which] = undefined;
    await this.shut(l);
  }

  private async shut(l: Listener): Promise<void> {
    l.detach?.();
    l.tls?.close();
    await new Promise<void>((resolve) => {
      l.server.close(() => resolve());
      // Keep-alive clients would hold the port; a restart must free it now.
      l.server.closeAllConnections();
    });
  }

  async update(next: Resource<Spec>): Promise<void> {
    try {
      await this.ensure(next.spec);
      this.failure = '';
    } catch (e) {
      // A listener that could not move still serves where it was: say where.
      const err = e instanceof DriverError ? e : new DriverError(String(e), true);
      const on = [this.http, this.https].filter((l) => !!l).map((l) => addressOf(l.server));
      this.failure = `${err.message}; ${on.length ? `still serving on ${on.join(' and ')}` : 'not serving'}`;
      throw new DriverError(this.failure, err.retryable);
    }
  }

  async close(): Promise<void> {
    this.closed = true;
    await Promise.all([this.stop('http'), this.stop('https')]);
  }

  status(): ResourceStatus {
    if (this.closed) return { state: 'closed' };
    const st: ResourceStatus = {
      state: this.failure ? 'error' : this.http ? 'listening' : 'stopped',
      ...(this.failure ? { message: this.failure } : {}),
    };
    if (this.http) st['http'] = addressOf(this.http.server);
    if (this.http?.detach) {
      const d = this.host.services.get(LIVE_DELIVERY_SERVICE);
      if (d) st['native-delivery'] = d.stats();
    }
    if (this.https) st['https'] = addressOf(this.https.server);
    if (this.https?.tls) st['https-certificate'] = this.https.tls.info();
    return st;
  }
}

export const httpServerDriver: KindDriver<'http-server'> = {
  kind: 'http-server',
  async create(res, host) {
    const inst = new HttpServerInstance(host);
    try {
      await inst.ensure(res.spec);
    } catch (e) {
      await inst.close();
      throw e;
    }
    return inst;
  },
};
