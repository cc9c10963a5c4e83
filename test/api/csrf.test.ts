// No state change from a plain form (issue 35): every route of the admin app that changes
// something — read off the app's own route table, not a hand list — refuses what a page of any
// site can send (text/plain, form and multipart bodies; a POST with no body and no
// X-Sluice-Request) and anything from another origin, before a handler runs; the API's own
// clients get through. Then the same walk against the real server from 127.0.0.1 (anonymous
// admin, a page on loopback's best target): nothing changes; playback is unaffected.
import { readFile } from 'node:fs/promises';
import type { FastifyInstance } from 'fastify';
import t, { type Test } from 'tap';
import { buildApp } from '../../src/api/app.ts';
import { CHANGE_HEADER } from '../../src/api/csrf.ts';
import { fakeContext } from '../helpers/api-context.ts';
import { liveTsConfig } from '../helpers/ott.ts';
import { startServer, waitFor } from '../helpers/server.ts';

type Route = { method: string; url: string };
const READ_METHODS = new Set(['GET', 'HEAD', 'OPTIONS']);
/** A value for each path parameter, so every route is matched. */
const PARAM_VALUE: Record<string, string> = { kind: 'stream', id: '1', token: 'x' };

/**
 * The state-changing routes in the app's route table (printRoutes without a common prefix:
 * one line per path segment, four columns per level, the methods in brackets).
 */
function stateChangingRoutes(app: FastifyInstance): Route[] {
  const out: Route[] = [];
  const pathAt: string[] = [];
  for (const line of app.printRoutes({ commonPrefix: false }).split('\n')) {
    const m = /^([│├└─ ]*)(\S+)(?: \(([A-Z, ]+)\))?$/.exec(line);
    if (!m) continue;
    const depth = m[1]!.length / 4 - 1;
    const path = (pathAt[depth - 1] ?? '') + m[2]!;
    pathAt[depth] = path;
    for (const method of m[3]?.split(', ') ?? []) {
      if (!READ_METHODS.has(method)) out.push({ method, url: path });
    }
  }
  return out;
}

function concrete(url: string): string {
  return url.replace(/:(\w+)/g, (_, p: string) => PARAM_VALUE[p] ?? 'x').replace('*', 'x');
}

interface Attack {
  what: string;
  headers: Record<string, string>;
  body?: string;
  status: number;
  /** Only for this method (a body-less POST is the one simple request without a type). */
  method?: string;
}

const FOREIGN = 'http://evil.example';
const ATTACKS: Attack[] = [
  { what: 'a text/plain form', headers: { 'content-type': 'text/plain' }, body: '{}', status: 415 },
  {
    what: 'an urlencoded form',
    headers: { 'content-type': 'application/x-www-form-urlencoded' },
    body: 'a=1',
    status: 415,
  },
  {
    what: 'a multipart form',
    headers: { 'content-type': 'multipart/form-data; boundary=b' },
    body: '--b--\r\n',
    status: 415,
  },
  {
    what: 'JSON from another origin',
    headers: { 'content-type': 'application/json', origin: FOREIGN },
    body: '{}',
    status: 403,
  },
  {
    what: 'JSON from a page on loopback, another port',
    headers: { 'content-type': 'application/json', origin: 'http://127.0.0.1:1' },
    body: '{}',
    status: 403,
  },
  {
    what: 'JSON from a sandboxed page (Origin: null)',
    headers: { 'content-type': 'application/json', origin: 'null' },
    body: '{}',
    status: 403,
  },
  {
    what: 'JSON the browser calls cross-site',
    headers: { 'content-type': 'application/json', 'sec-fetch-site': 'cross-site' },
    body: '{}',
    status: 403,
  },
  { what: 'a POST without a body or the header', headers: {}, status: 403, method: 'POST' },
];

async function appWithSpy(t: Test) {
  const ctx = fakeContext();
  const app = await buildApp(ctx);
  const handled: string[] = [];
  app.addHook('preHandler', async (req) => {
    handled.push(`${req.method} ${req.url}`);
  });
  await app.ready();
  t.teardown(() => app.close());
  return { app, ctx, handled };
}

t.test('every state-changing route refuses forms and other origins before it runs', async (t) => {
  const { app, ctx, handled } = await appWithSpy(t);
  const routes = stateChangingRoutes(app);
  const names = routes.map((r) => `${r.method} ${r.url}`);
  for (const known of [
    'POST /xmltv/reset-cache',
    'POST /data/epg/update',
    'POST /data/epg/sql',
    'POST /config/check',
    'PATCH /config',
    'PUT /config/:kind/:id',
    'DELETE /data/sessions/:id',
    'POST /data/dvb-adapter/:id/scan',
  ]) {
    t.ok(names.includes(known), `the route table has ${known}`);
  }
  const before = ctx.config.current().etag;
  for (const r of routes) {
    for (const a of ATTACKS) {
      if (a.method && a.method !== r.method) continue;
      const res = await app.inject({
        method: r.method as 'POST',
        url: concrete(r.url),
        headers: a.headers,
        ...(a.body !== undefined ? { payload: a.body } : {}),
      });
      t.equal(res.statusCode, a.status, `${r.method} ${r.url}: ${a.what} is ${a.status}`);
      t.match(res.json().message, /docs\/api\.md/, 'the answer says where the rule is written');
    }
  }
  t.same(handled, [], 'no handler ran');
  t.equal(ctx.config.current().etag, before, 'the config is unchanged');
});

t.test('the API, the dashboard and the CLI get through', async (t) => {
  const { app, handled } = await appWithSpy(t);
  const json = { 'content-type': 'application/json' };
  const cases: {
    what: string;
    method: 'POST' | 'PATCH';
    url: string;
    headers: Record<string, string>;
  }[] = [
    { what: 'JSON with no Origin (curl, the CLI)', method: 'PATCH', url: '/config', headers: json },
    {
      what: 'JSON from its own origin (the dashboard)',
      method: 'PATCH',
      url: '/config',
      headers: { ...json, origin: 'http://localhost:80', 'sec-fetch-site': 'same-origin' },
    },
    {
      what: 'a proxy rewrote Host, the browser says same-origin',
      method: 'PATCH',
      url: '/config',
      headers: { ...json, origin: 'https://admin.example', 'sec-fetch-site': 'same-origin' },
    },
    {
      what: 'a typed URL (Sec-Fetch-Site: none)',
      method: 'PATCH',
      url: '/config',
      headers: { ...json, 'sec-fetch-site': 'none' },
    },
  ];
  for (const c of cases) {
    const res = await app.inject({ method: c.method, url: c.url, headers: c.headers, payload: {} });
    t.equal(res.statusCode, 200, c.what);
  }
  const reset = await app.inject({
    method: 'POST',
    url: '/xmltv/reset-cache',
    headers: { [CHANGE_HEADER]: '1' },
  });
  t.equal(reset.statusCode, 200, `a POST without a body, with ${CHANGE_HEADER}`);
  const check = await app.inject({
    method: 'POST',
    url: '/config/check',
    payload: { text: '{"stream": []}' },
  });
  t.equal(check.statusCode, 200, 'the config check takes its text as JSON');
  t.match(check.json(), { valid: true });
  const sql = await app.inject({
    method: 'POST',
    url: '/data/epg/sql?s=1',
    payload: { sql: 'SELECT 1' },
  });
  t.equal(sql.statusCode, 503, 'SQL as JSON reaches the route (no EPG runs here)');
  const read = await app.inject({
    method: 'GET',
    url: '/data/status',
    headers: { origin: FOREIGN, 'sec-fetch-site': 'cross-site' },
  });
  t.equal(read.statusCode, 200, 'reads are not changes');
  t.equal(handled.length, cases.length + 4, 'each reached its handler');
});

t.test('the real server: the walk changes nothing; playback is unaffected', async (t) => {
  const { app } = await appWithSpy(t);
  const routes = stateChangingRoutes(app);
  const srv = await startServer(t, { config: liveTsConfig() });
  const configText = await readFile(srv.configPath!, 'utf8');
  const etag = (await fetch(`${srv.url}/config`)).headers.get('etag');
  for (const r of routes) {
    for (const a of [ATTACKS[0]!, ATTACKS[3]!]) {
      const res = await fetch(`${srv.url}${concrete(r.url)}`, {
        method: r.method,
        headers: a.headers,
        ...(a.body !== undefined ? { body: a.body } : {}),
      });
      t.equal(res.status, a.status, `${r.method} ${r.url}: ${a.what}`);
    }
  }
  t.equal(await readFile(srv.configPath!, 'utf8'), configText, 'the config file is unchanged');
  t.equal((await fetch(`${srv.url}/config`)).headers.get('etag'), etag, 'so is the ETag');

  const doc = JSON.parse(configText) as { 'epg-server': { port: number } };
  const epg = await fetch(`http://127.0.0.1:${doc['epg-server'].port}/xmltv`, {
    method: 'POST',
    headers: { 'content-type': 'text/plain', origin: FOREIGN },
    body: 'x',
  });
  t.equal(epg.status, 405, 'the EPG server takes GET only');

  // A player page elsewhere: cross-site GET and HEAD play as before.
  const player = { origin: 'https://player.example', 'sec-fetch-site': 'cross-site' };
  const playlist = await waitFor(
    'the live playlist',
    async () => {
      const res = await fetch(`${srv.url}/live/index.m3u8`, { headers: player });
      return res.status === 200 ? res : undefined;
    },
    30_000,
  );
  t.equal(playlist.headers.get('access-control-allow-origin'), '*', 'readable by the player');
  const head = await fetch(`${srv.url}/live/index.m3u8`, { method: 'HEAD', headers: player });
  t.equal(head.status, 200, 'HEAD from another site');
});
