// Viewer sessions (docs/billing.md): GET /data/sessions lists them (a token only as its
// fingerprint), DELETE /data/sessions/{id} ends one (its viewer is refused on that stream for
// `cs.kick-sec`); their counts and the billing verdicts in /metrics.
import type { FastifyInstance } from 'fastify';
import { Gauge, type Registry } from 'prom-client';
import { VIEWER_GATE_SERVICE, type ViewerGate } from '../../billing/gate.ts';
import type { ViewerSession } from '../../billing/sessions.ts';
import { HttpError } from '../../errors.ts';
import type { AppContext } from '../context.ts';
import { metricsRegistry, totalCounter } from './metrics.ts';

const SESSIONS = 'sluice_viewer_sessions';

function view(gate: ViewerGate, s: ViewerSession, now: number) {
  return {
    id: s.id,
    viewer: s.viewer,
    credential: s.login ? 'login' : 'token',
    stream: s.stream,
    ip: s.ip,
    'user-agent': s.userAgent,
    server: s.server?.id ?? null,
    opened: new Date(s.openedAt).toISOString(),
    'duration-sec': Math.round((now - s.openedMono) / 1000),
    bytes: gate.sessions.bytesOf(s),
    requests: s.requests,
    'open-responses': s.open.size,
  };
}

function installMetrics(registry: Registry, gate: () => ViewerGate | undefined): void {
  if (registry.getSingleMetric(SESSIONS)) return;
  new Gauge({
    name: SESSIONS,
    help: 'Open viewer sessions by stream (or adaptive group) name',
    labelNames: ['stream'],
    registers: [registry],
    collect() {
      this.reset();
      const g = gate();
      if (!g) return;
      const by = new Map<string, number>();
      for (const s of g.sessions.all()) by.set(s.stream, (by.get(s.stream) ?? 0) + 1);
      for (const [stream, n] of by) this.set({ stream }, n);
    },
  });
  const stat = (key: keyof ViewerGate['stats']) => () => gate()?.stats[key] ?? 0;
  totalCounter(
    registry,
    'sluice_billing_requests_total',
    'Authorisation requests sent to billing servers',
    stat('asked'),
  );
  totalCounter(
    registry,
    'sluice_billing_cache_hits_total',
    'Playback requests answered from a cached verdict',
    stat('cacheHits'),
  );
  totalCounter(
    registry,
    'sluice_billing_allowed_total',
    'Verdicts that granted playback (billing or policy)',
    stat('allowed'),
  );
  totalCounter(
    registry,
    'sluice_billing_denied_total',
    'Verdicts that refused playback (billing or policy)',
    stat('denied'),
  );
  totalCounter(
    registry,
    'sluice_billing_unavailable_total',
    'Authorisations no billing server gave a verdict for',
    stat('unavailable'),
  );
  totalCounter(
    registry,
    'sluice_billing_accounting_sent_total',
    'Accounting notifications a billing server accepted (2xx)',
    stat('accountingSent'),
  );
  totalCounter(
    registry,
    'sluice_billing_accounting_failed_total',
    'Accounting notifications that failed',
    stat('accountingFailed'),
  );
}

export async function sessionRoutes(
  app: FastifyInstance,
  opts: { ctx: AppContext },
): Promise<void> {
  const { services, clock } = opts.ctx;
  const gate = () => services.get(VIEWER_GATE_SERVICE);
  installMetrics(metricsRegistry(services), gate);
  app.get('/data/sessions', {
    schema: {
      tags: ['data'],
      summary: 'Open viewer sessions (billing authorisation, docs/billing.md)',
      querystring: {
        type: 'object',
        properties: { stream: { type: 'string', description: 'only this stream or group' } },
      },
    },
    handler: async (req) => {
      const g = gate();
      const only = (req.query as { stream?: string }).stream;
      const now = clock.monotonic();
      const list = g
        ? [...g.sessions.all()]
            .filter((s) => !only || s.stream === only)
            .map((s) => view(g, s, now))
        : [];
      return { authorising: g?.active ?? false, sessions: list };
    },
  });
  app.delete('/data/sessions/:id', {
    schema: {
      tags: ['data'],
      summary:
        'End a viewer session: its responses are cut and its viewer refused on that stream for cs.kick-sec',
      params: { type: 'object', properties: { id: { type: 'string' } }, required: ['id'] },
    },
    handler: async (req) => {
      const g = gate();
      const { id } = req.params as { id: string };
      const now = clock.monotonic();
      const s = g?.kick(id);
      if (!g || !s) throw new HttpError('NOT_FOUND', `no open viewer session ${id}`);
      return { status: 'ended', session: view(g, s, now) };
    },
  });
}
