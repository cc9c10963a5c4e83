// Drivers of viewer authorisation (docs/billing.md): `cs` (the gate's cache, policy and session
// settings), `cs-server` (one billing server each) and `user-default` (sessions per viewer), all
// feeding the one ViewerGate the server registers under VIEWER_GATE_SERVICE.
import { type GateSettings, VIEWER_GATE_SERVICE, ViewerGate } from '../billing/gate.ts';
import type { BillingServer } from '../billing/server.ts';
import { parseHeaderLines, unknownPlaceholders } from '../billing/template.ts';
import type { ResponseFormat } from '../billing/verdict.ts';
import type { Resource } from '../config/types.ts';
import { OTT_ACCESS_SERVICE } from '../ott/access.ts';
import type { Host, Instance, KindDriver, ResourceStatus, SpecOf } from '../reconciler/driver.ts';

/** The gate in `host.services`, made there on first use (main.ts makes it at start, so the
 *  OTT services that follow it find it). */
export function viewerGate(host: Host): ViewerGate {
  let gate = host.services.get(VIEWER_GATE_SERVICE);
  if (!gate) {
    gate = new ViewerGate(host.clock, host.log.child({ billing: true }));
    host.services.set(VIEWER_GATE_SERVICE, gate);
    host.services.set(OTT_ACCESS_SERVICE, gate);
  }
  return gate;
}

function gateSettings(spec: SpecOf<'cs'>): GateSettings {
  return {
    verdictCacheMs: spec['verdict-cache-sec'] * 1000,
    denialCacheMs: spec['denial-cache-sec'] * 1000,
    whenUnavailable: spec['when-unavailable'],
    idleMs: spec['session-idle-sec'] * 1000,
    interimMs: spec['interim-sec'] * 1000,
    kickMs: spec['kick-sec'] * 1000,
    loopbackAnonymous: spec['loopback-anonymous'],
  };
}

class CsInstance implements Instance<SpecOf<'cs'>> {
  constructor(
    spec: SpecOf<'cs'>,
    private readonly gate: ViewerGate,
  ) {
    gate.configure(gateSettings(spec));
  }

  async update(next: Resource<SpecOf<'cs'>>): Promise<void> {
    this.gate.configure(gateSettings(next.spec));
  }

  async close(): Promise<void> {
    this.gate.configure(undefined);
  }

  status(): ResourceStatus {
    return {
      state: 'running',
      authorising: this.gate.active,
      sessions: this.gate.sessions.size,
      ...this.gate.stats,
    };
  }
}

export const csDriver: KindDriver<'cs'> = {
  kind: 'cs',
  async create(res, host) {
    return new CsInstance(res.spec, viewerGate(host));
  },
};

type ServerSpec = SpecOf<'cs-server'>;

function toServer(spec: ServerSpec): { server: BillingServer; warnings: string[] } {
  const { headers, bad } = parseHeaderLines(spec['request-header']);
  const warnings = bad.map((line) => `request-header line ignored (not "Name: value"): ${line}`);
  for (const field of ['request-query', 'request-body', 'request-header'] as const)
    for (const p of unknownPlaceholders(spec[field]))
      warnings.push(`${field}: ${p} is not a placeholder (docs/billing.md); sent as written`);
  if (!/^https?:$/.test(URL.parse(spec.url)?.protocol ?? ''))
    warnings.push(
      `url ${spec.url} is not an http:// or https:// address: the server never answers`,
    );
  const format = (spec['response-format'] || 'status') as ResponseFormat;
  return {
    server: {
      id: spec.id,
      name: spec.name,
      secret: spec.password,
      url: spec.url,
      timeoutMs: spec.timeout * 1000,
      accounting: spec['billing-sess-accounting'],
      loginPrefix: spec['login-prefix'],
      loginSuffix: spec['login-suffix'],
      trace: spec.trace,
      order: spec.order,
      enabled: spec.connector === '' || spec.connector === 'universal',
      requestQuery: spec['request-query'],
      requestBody: spec['request-body'],
      requestContentType: spec['request-content-type'],
      requestHeaders: headers,
      reply: {
        format,
        okPath: spec['response-ok-path'],
        okValue: spec['response-ok-value'],
        reasonPath: spec['response-reason-path'],
      },
    },
    warnings,
  };
}

class CsServerInstance implements Instance<ServerSpec> {
  private server!: BillingServer;
  private warnings: string[] = [];

  constructor(
    spec: ServerSpec,
    private readonly gate: ViewerGate,
    private readonly host: Host,
  ) {
    this.apply(spec);
  }

  private apply(spec: ServerSpec): void {
    const { server, warnings } = toServer(spec);
    this.server = server;
    this.warnings = warnings;
    for (const w of warnings) this.host.log.warn({ server: spec.name }, w);
    this.gate.setServer(server);
  }

  async update(next: Resource<ServerSpec>): Promise<void> {
    this.apply(next.spec);
  }

  async close(): Promise<void> {
    this.gate.deleteServer(this.server.id);
  }

  status(): ResourceStatus {
    return {
      state: this.server.enabled ? 'running' : 'disabled',
      name: this.server.name,
      url: this.server.url,
      ...(this.warnings.length ? { warnings: this.warnings } : {}),
    };
  }
}

export const csServerDriver: KindDriver<'cs-server'> = {
  kind: 'cs-server',
  async create(res, host) {
    return new CsServerInstance(res.spec, viewerGate(host), host);
  },
};

class UserDefaultInstance implements Instance<SpecOf<'user-default'>> {
  constructor(
    spec: SpecOf<'user-default'>,
    private readonly gate: ViewerGate,
  ) {
    gate.maxSessions = spec['max-sessions'];
  }

  async update(next: Resource<SpecOf<'user-default'>>): Promise<void> {
    this.gate.maxSessions = next.spec['max-sessions'];
  }

  async close(): Promise<void> {
    this.gate.maxSessions = 0;
  }

  status(): ResourceStatus {
    return { state: 'running', 'max-sessions': this.gate.maxSessions };
  }
}

export const userDefaultDriver: KindDriver<'user-default'> = {
  kind: 'user-default',
  async create(res, host) {
    return new UserDefaultInstance(res.spec, viewerGate(host));
  },
};
