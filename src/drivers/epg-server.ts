// Drivers of the EPG server (`epg-server`: its listeners) and of its records: channel sets
// (`epg-channel-set`) and accounts (`epg-login`), which live in the shared EPG runtime.

import type { Resource } from '../config/types.ts';
import { acquireEpgRuntime, type EpgRuntime, releaseEpgRuntime } from '../epg/runtime.ts';
import {
  EPG_HTTP_SERVICE,
  type EpgHttpServer,
  type EpgHttpServerFactory,
  type EpgServerSettings,
  type Restarted,
  serverSettings,
} from '../epg/xmltv-cache.ts';
import {
  DriverError,
  type Host,
  type Instance,
  type KindDriver,
  type ResourceStatus,
  type SpecOf,
} from '../reconciler/driver.ts';
import { PORT_OVERRIDES_SERVICE, portAdvice } from './port-overrides.ts';

/** The listener settings of the record, with the port `sluice serve --epg-port` gives. */
type ServerSpec = SpecOf<'epg-server'>;

function settingsOf(spec: ServerSpec, host: Host): EpgServerSettings {
  const s = serverSettings(spec);
  const port = host.services.get(PORT_OVERRIDES_SERVICE)?.epg;
  return port === undefined ? s : { ...s, port };
}

/** Why the EPG server cannot listen, in one line that says what to do about a taken port. */
function listenFailure(err: unknown, s: EpgServerSettings, host: Host): DriverError {
  const e = err as NodeJS.ErrnoException & { port?: number };
  if (e.code !== 'EADDRINUSE') {
    return new DriverError(`EPG server cannot listen: ${(err as Error).message}`, true);
  }
  const https = e.port !== undefined && e.port === s.httpsPort && e.port !== s.port;
  const where = `${https ? 'HTTPS' : 'HTTP'} ${s.bindAddress}:${https ? s.httpsPort : s.port}`;
  const advice = https
    ? 'set epg-server.https-port in the config to a free port'
    : portAdvice(
        'epg-server.port',
        '--epg-port',
        host.services.get(PORT_OVERRIDES_SERVICE)?.epg !== undefined,
      );
  return new DriverError(
    `EPG server cannot listen: ${where}: the port is in use by another program; ${advice}`,
    true,
  );
}

class EpgServerInstance implements Instance<ServerSpec> {
  private server: EpgHttpServer;
  private ports: { http: number; https?: number } = { http: 0 };
  private closed = false;
  /** Why the last change of the listeners failed ('' when it did not): status says so. */
  private failure = '';

  private constructor(
    private rt: EpgRuntime,
    private host: Host,
    res: Resource<ServerSpec>,
    create: EpgHttpServerFactory,
  ) {
    this.server = create(rt, settingsOf(res.spec, host));
  }

  static async create(res: Resource<ServerSpec>, host: Host): Promise<EpgServerInstance> {
    const create = host.services.get(EPG_HTTP_SERVICE);
    if (!create) throw new DriverError('no EPG HTTP server in this process', false);
    const rt = acquireEpgRuntime(host);
    const inst = new EpgServerInstance(rt, host, res, create);
    try {
      await inst.start();
    } catch (err) {
      await inst.close();
      throw listenFailure(err, settingsOf(res.spec, host), host);
    }
    return inst;
  }

  /** Bound ports (tests use port 0). */
  get listening(): { http: number; https?: number } {
    return this.ports;
  }

  private async start(): Promise<void> {
    this.ports = await this.server.listen();
    this.host.log.info({ ...this.ports }, 'EPG server listening');
  }

  async update(next: Resource<ServerSpec>): Promise<void> {
    // The header attributes are inside the cached bodies: rebuild them on the next request.
    this.rt.bump();
    let restarted: Restarted;
    const settings = settingsOf(next.spec, this.host);
    try {
      restarted = await this.server.apply(settings);
    } catch (err) {
      // The listener that could not move still serves where it was: say where.
      this.ports = this.server.ports();
      const e = listenFailure(err, settings, this.host);
      this.failure = `${e.message}; ${this.serving()}`;
      throw new DriverError(this.failure, e.retryable);
    }
    this.failure = '';
    this.ports = this.server.ports();
    if (restarted.http || restarted.https) {
      this.host.log.info({ ...this.ports, restarted }, 'EPG server listener restarted');
    }
  }

  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    await this.server.close();
    releaseEpgRuntime(this.host, this.rt);
  }

  /** Where the listeners serve now, in words. */
  private serving(): string {
    const on = [
      ...(this.ports.http ? [`HTTP port ${this.ports.http}`] : []),
      ...(this.ports.https ? [`HTTPS port ${this.ports.https}`] : []),
    ];
    return on.length ? `still serving on ${on.join(' and ')}` : 'not serving';
  }

  status(): ResourceStatus {
    const cert = this.closed ? undefined : this.server.certificate?.();
    return {
      state: this.closed ? 'closed' : this.failure ? 'error' : 'listening',
      ...(this.failure && !this.closed ? { message: this.failure } : {}),
      ...this.ports,
      ...(cert ? { 'https-certificate': cert } : {}),
    };
  }
}

export const epgServerDriver: KindDriver<'epg-server'> = {
  kind: 'epg-server',
  create: (res, host) => EpgServerInstance.create(res, host),
};

/** A record kept in the runtime while its resource exists. */
class RecordInstance<S> implements Instance<S> {
  private rt: EpgRuntime;
  private closed = false;

  constructor(
    res: Resource<S>,
    private host: Host,
    private put: (rt: EpgRuntime, spec: S) => void,
    private remove: (rt: EpgRuntime) => void,
  ) {
    this.rt = acquireEpgRuntime(host);
    put(this.rt, res.spec);
  }

  async update(next: Resource<S>): Promise<void> {
    this.put(this.rt, next.spec);
  }

  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    this.remove(this.rt);
    releaseEpgRuntime(this.host, this.rt);
  }

  status(): ResourceStatus {
    return { state: 'ready' };
  }
}

export const epgChannelSetDriver: KindDriver<'epg-channel-set'> = {
  kind: 'epg-channel-set',
  async create(res, host) {
    const id = res.spec.id;
    return new RecordInstance(
      res,
      host,
      (rt, spec) => {
        rt.channelSets.set(id, { id, name: spec.name });
        rt.bump();
      },
      (rt) => {
        rt.channelSets.delete(id);
        rt.bump();
      },
    );
  },
};

export const epgLoginDriver: KindDriver<'epg-login'> = {
  kind: 'epg-login',
  async create(res, host) {
    const id = res.spec.id;
    return new RecordInstance(
      res,
      host,
      (rt, spec) => {
        rt.logins.set(id, {
          id,
          login: spec.login,
          password: spec.password,
          channelSet: spec['channel-set'],
          pause: spec.pause,
          limitDay: spec['limit-day'],
          limitIp: spec['limit-ip'],
        });
      },
      (rt) => {
        rt.logins.delete(id);
      },
    );
  },
};
