// The app as a whole through inject(): /data/status, /metrics, /openapi.json, the OTT
// catch-all, HEAD, the one error handler (500 logged, body never leaks), viewer access rules.
import { Writable } from 'node:stream';
import pino from 'pino';
import { Registry } from 'prom-client';
import t from 'tap';
import { buildApp } from '../../src/api/app.ts';
import { viewerMayAccess } from '../../src/api/auth/plugin.ts';
import type { AppContext } from '../../src/api/context.ts';
import { METRICS_REGISTRY_SERVICE } from '../../src/drivers/stream/metrics.ts';
import { Services } from '../../src/util/services.ts';
import { fakeContext } from '../helpers/api-context.ts';

async function app(t: Tap, over: Partial<AppContext> = {}) {
  const a = await buildApp(fakeContext(over));
  t.teardown(() => a.close());
  return a;
}
type Tap = { teardown(fn: () => unknown): void };

t.test('/data/status merges the source and the loop status', async (t) => {
  const a = await app(t);
  const r = await a.inject({ url: '/data/status' });
  t.equal(r.statusCode, 200);
  t.match(r.json(), {
    source: { source: 'memory', etag: String },
    revision: 'r1',
    resources: [{ kind: 'stream', key: '1', state: 'running' }],
  });
});

t.test('/metrics: process metrics and per-route request counts', async (t) => {
  const registry = new Registry();
  const a = await app(t, { services: new Services().set(METRICS_REGISTRY_SERVICE, registry) });
  await a.inject({ url: '/config' });
  await a.inject({ url: '/config/stream/9' });
  const r = await a.inject({ url: '/metrics' });
  t.equal(r.statusCode, 200);
  t.match(r.headers['content-type'], /^text\/plain/);
  t.match(r.body, /process_cpu_user_seconds_total/);
  t.match(r.body, /sluice_api_requests_total\{method="GET",route="\/config",status="200"\} 1/);
  t.match(
    r.body,
    /sluice_api_requests_total\{method="GET",route="\/config\/:kind\/:id",status="404"\} 1/,
  );
  // A second app on the same registry (HTTP and HTTPS) shares the metrics instead of failing.
  const b = await app(t, { services: new Services().set(METRICS_REGISTRY_SERVICE, registry) });
  t.equal((await b.inject({ url: '/metrics' })).statusCode, 200);
});

t.test('/metrics: the event loop delay is a histogram of the main loop', async (t) => {
  const registry = new Registry();
  const a = await app(t, { services: new Services().set(METRICS_REGISTRY_SERVICE, registry) });
  const r = await a.inject({ url: '/metrics' });
  t.match(r.body, /^# TYPE sluice_eventloop_delay_seconds histogram$/m);
  t.match(r.body, /^sluice_eventloop_delay_seconds_bucket\{le="\+Inf",loop="main"\} \d+$/m);
  t.match(r.body, /^sluice_eventloop_delay_max_seconds\{loop="main"\} \S+$/m);
  t.notMatch(r.body, /quantile=/, 'no quantiles that a scrape would reset');
});

t.test('/openapi.json describes the routes from their schemas', async (t) => {
  const a = await app(t);
  const r = await a.inject({ url: '/openapi.json' });
  t.equal(r.statusCode, 200);
  const doc = r.json();
  t.equal(doc.openapi, '3.0.3');
  for (const p of [
    '/config',
    '/config/{kind}',
    '/config/{kind}/{id}',
    '/config/plan',
    '/data/status',
    '/metrics',
  ]) {
    t.ok(doc.paths[p], `documents ${p}`);
  }
  t.ok(doc.paths['/config/{kind}/{id}'].patch, 'PATCH of a record');
  t.notOk(doc.paths['/config/{kind}/{id}'].post, '405 routes are hidden');
  t.ok(doc.components.schemas.ApiError ?? doc.components.schemas['def-1'], 'error schema');
  t.same(doc.components.securitySchemes.digest, { type: 'http', scheme: 'digest' });
});

t.test('OTT catch-all: registered names answer, HEAD works, others are 404 JSON', async (t) => {
  const ctx = fakeContext();
  const a = await app(t, ctx);
  ctx.ottRouter.register('news', (_req, reply, rest) =>
    reply.type('text/plain').send(`news ${rest}`),
  );
  const r = await a.inject({ url: '/news/index.m3u8?_HLS_msn=3' });
  t.equal(r.body, 'news index.m3u8', 'rest excludes the query');
  const h = await a.inject({ method: 'HEAD', url: '/news/mpegts' });
  t.equal(h.statusCode, 200);
  t.equal(h.body, '');
  const g = await a.inject({ url: '/gone/mpegts' });
  t.equal(g.statusCode, 404);
  t.same(g.json(), { status: 404, message: 'No stream gone' });
  const external = await a.inject({ url: '/news/index.m3u8', remoteAddress: '192.0.2.1' });
  t.equal(external.statusCode, 200, 'no Digest for playback');
});

t.test('unexpected errors: 500 JSON, logged, no detail leaked', async (t) => {
  const lines: string[] = [];
  const log = pino(
    { level: 'error' },
    new Writable({
      write(chunk, _enc, cb) {
        lines.push(String(chunk));
        cb();
      },
    }),
  );
  const config = fakeContext().config;
  const broken = {
    ...config,
    current: config.current.bind(config),
    edit: async () => {
      throw new Error('disk on fire at /secret/path');
    },
    sourceInfo: () => ({}),
  };
  const a = await app(t, { log, config: broken });
  const r = await a.inject({
    method: 'PATCH',
    url: '/config',
    payload: '{}',
    headers: { 'content-type': 'application/json' },
  });
  t.equal(r.statusCode, 500);
  t.same(r.json(), { status: 500, message: 'Internal Server Error' });
  t.match(lines.join(''), /disk on fire/);
});

t.test('viewer access rules', async (t) => {
  const cases: Array<[string, string, boolean]> = [
    ['GET', '/data/status', true],
    ['HEAD', '/data/stream/:id', true],
    ['GET', '/metrics', true],
    ['GET', '/openapi.json', true],
    ['GET', '/schema/lang', true],
    ['POST', '/data/epg/update', false],
    ['GET', '/config', false],
    ['GET', '/config/:kind', false],
    ['GET', '/database', false],
    ['PUT', '/config', false],
  ];
  for (const [m, p, ok] of cases) t.equal(viewerMayAccess(m, p), ok, `${m} ${p}`);
});
