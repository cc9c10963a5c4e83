// sluice's own requests are never anonymous loopback, through the real server: inputs, EPG
// sources, billing and webhook pointed back at its admin API, EPG server or gated playback all
// get 401 (segment, key, variant, redirect, rtsp tunnel), while curl on loopback stays admin.
import { execFile } from 'node:child_process';
import { writeFile } from 'node:fs/promises';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import path from 'node:path';
import { promisify } from 'node:util';
import t from 'tap';
import { freePort, loopbackServers, startServer, tempDir, waitFor } from '../../helpers/server.ts';

const run = promisify(execFile);
/** Start-up, the first playlist, backoff and the alerter's 1 s sweep, on a busy machine. */
const SETTLE_MS = 30_000;

const port = await freePort();
const epgPort = await freePort();
const admin = `http://127.0.0.1:${port}`;

/** The playlists of an origin that points sluice back at itself. */
const ORIGIN: Record<string, string> = {
  '/segments.m3u8': [
    '#EXTM3U',
    '#EXT-X-TARGETDURATION:1',
    '#EXTINF:1,',
    `${admin}/config/user/admin`,
    '#EXTINF:1,',
    `${admin}/data/alerts`,
    '#EXT-X-ENDLIST',
  ].join('\n'),
  '/key.m3u8': [
    '#EXTM3U',
    '#EXT-X-TARGETDURATION:1',
    `#EXT-X-KEY:METHOD=AES-128,URI="${admin}/config/user/admin"`,
    '#EXTINF:1,',
    '/segment.ts',
    '#EXT-X-ENDLIST',
  ].join('\n'),
  '/master.m3u8': [
    '#EXTM3U',
    '#EXT-X-STREAM-INF:BANDWIDTH=1000000',
    `${admin}/config/user/admin`,
  ].join('\n'),
};
const origin = http.createServer((req, res) => {
  if (req.url === '/redirect.m3u8') {
    res.writeHead(302, { location: `${admin}/config/user/admin` }).end();
    return;
  }
  const body = ORIGIN[req.url ?? ''] ?? (req.url === '/segment.ts' ? 'x'.repeat(188 * 16) : '');
  res.writeHead(body ? 200 : 404, { 'content-type': 'application/vnd.apple.mpegurl' }).end(body);
});
await new Promise<void>((ok) => origin.listen(0, '127.0.0.1', ok));
t.teardown(() => new Promise((ok) => origin.close(ok)));
const from = `http://127.0.0.1:${(origin.address() as AddressInfo).port}`;

const hls = (id: number, name: string, uri: string, extra: Record<string, unknown> = {}) => ({
  id,
  'stream-name': name,
  pause: false,
  ...extra,
  input: [{ type: 'hls', uri }],
});
/** The streams whose one input is sluice fetching from itself, by id. */
const PULLS: Record<number, string> = {
  1: 'segments',
  2: 'key',
  3: 'variant',
  4: 'redirect',
  5: 'own gated playback',
  7: 'rtsp tunnelled over HTTP',
};
const config = {
  user: [{ login: 'admin', password: 'not-shared', role: 'admin' }],
  stream: [
    hls(1, 'segments', `${from}/segments.m3u8`),
    hls(2, 'key', `${from}/key.m3u8`),
    hls(3, 'variant', `${from}/master.m3u8`),
    hls(4, 'redirect', `${from}/redirect.m3u8`),
    hls(5, 'pull-gated', `${admin}/gated/index.m3u8`),
    {
      id: 7,
      'stream-name': 'rtsp-tunnel',
      pause: false,
      input: [{ type: 'rtsp', uri: `rtsp://127.0.0.1:${port}/config/user/admin`, transport: 2 }],
    },
    // Played through the viewer gate; its input never delivers (nothing sends to the port).
    {
      id: 6,
      'stream-name': 'gated',
      pause: false,
      'ott-hls': 1,
      input: [{ type: 'udp', address: '127.0.0.1', port: await freePort() }],
    },
  ],
  epg: {
    source: [
      { id: 1, name: 'own-epg', source: `http://127.0.0.1:${epgPort}/xmltv`, enable: true },
      { id: 2, name: 'own-admin', source: `${admin}/config/user/admin`, enable: true },
    ],
  },
  cs: { server: [{ id: 1, name: 'own-billing', password: 'secret', url: `${admin}/config` }] },
  alerter: { 'webhook-url': `${admin}/config/user` },
};

const dir = await tempDir(t);
const configPath = path.join(dir, 'config.json');
await writeFile(configPath, JSON.stringify(loopbackServers(config, port, epgPort), null, 2));
const server = await startServer(t, { configPath, port });

const getJson = async (p: string) => (await fetch(`${admin}${p}`)).json() as Promise<unknown>;

/** sluice_api_requests_total by "METHOD route status". */
async function requests(): Promise<Map<string, number>> {
  const text = await (await fetch(`${admin}/metrics`)).text();
  const out = new Map<string, number>();
  const line = /^sluice_api_requests_total\{([^}]*)\} (\d+)/gm;
  for (const m of text.matchAll(line)) {
    const l = Object.fromEntries([...m[1]!.matchAll(/(\w+)="([^"]*)"/g)].map((x) => [x[1], x[2]]));
    out.set(`${l['method']} ${l['route']} ${l['status']}`, Number(m[2]));
  }
  return out;
}

/** What each pulling stream reported last: shown when the wait fails. */
const lastStatus: Record<string, string> = {};
/** The last error of each pulling stream's input, once every one has one naming a 401. */
function refusedErrors(): Promise<Record<string, string>> {
  return waitFor(
    'every pulling input to report a refusal',
    async () => {
      const out: Record<string, string> = {};
      for (const [id, what] of Object.entries(PULLS)) {
        const s = (await getJson(`/data/stream/${id}`)) as { inputs?: Record<string, unknown>[] };
        const transport = s.inputs?.[0]?.['transport'] as Record<string, unknown> | undefined;
        const err = String(transport?.['lastError'] ?? '');
        lastStatus[what] = JSON.stringify(s).slice(0, 1500);
        if (!/\b401\b/.test(err)) return undefined;
        out[what] = err;
      }
      return out;
    },
    SETTLE_MS,
  );
}

t.test('inputs pointed at the admin API and at their own playback get 401', async (t) => {
  const errors = await refusedErrors().catch((e) => {
    t.comment(JSON.stringify(lastStatus, null, 1));
    throw e;
  });
  for (const what of Object.values(PULLS)) t.ok(errors[what], `${what}: ${errors[what]}`);
  const counts = await requests();
  for (const key of ['GET /config/:kind/:id 401', 'GET /data/alerts 401', 'GET /:name/* 401'])
    t.ok((counts.get(key) ?? 0) > 0, `${key}: ${counts.get(key)}`);
  // Only the test itself reads /metrics, /data/status and /data/stream: every other answer of
  // the server was to its own requests, and each was a 401.
  const own = [...counts].filter(([k]) => !/ \/(metrics|data\/status|data\/stream\/:id) /.test(k));
  t.same(
    own.filter(([k]) => !k.endsWith(' 401')),
    [],
    'nothing but 401',
  );
  t.comment(`own requests refused so far: ${own.reduce((n, [, c]) => n + c, 0)}`);
});

t.test('EPG sources at its own EPG server and admin API get 401', async (t) => {
  const sources = await waitFor(
    'both EPG sources to fail',
    async () => {
      const { source } = (await getJson('/data/epg/source')) as {
        source: Record<string, unknown>[];
      };
      return source.filter((s) => s['lastError']).length >= 2 ? source : undefined;
    },
    SETTLE_MS,
  );
  for (const id of [1, 2]) {
    const src = sources.find((s) => s['id'] === id);
    t.match(src?.['lastError'], /HTTP 401/, `source ${id}: ${src?.['lastError']}`);
  }
});

t.test('a billing server and a webhook at the admin API get 401', async (t) => {
  // A viewer with a token: the gate asks the billing server, which is the admin API.
  const viewer = await fetch(`${admin}/gated/index.m3u8?token=viewer-1`);
  await viewer.arrayBuffer();
  const counts = await waitFor(
    'the billing request and a webhook POST',
    async () => {
      const c = await requests();
      return c.get('GET /config 401') && c.get('POST /config/:kind 401') ? c : undefined;
    },
    SETTLE_MS,
  );
  t.equal(viewer.status, 403, 'no verdict from a 401: the viewer is refused (when-unavailable)');
  const answered = (prefix: string) =>
    [...counts].filter(([k]) => k.startsWith(prefix) && !k.endsWith(' 401'));
  t.same(answered('GET /config '), [], 'the billing request never read the config');
  t.same(answered('POST /config/:kind '), [], 'no webhook POST got past the login');
});

t.test('a local tool on loopback is still anonymous admin', async (t) => {
  const curl = await run('curl', [
    '-s',
    '-o',
    '/dev/null',
    '-w',
    '%{http_code}',
    `${admin}/config/user/admin`,
  ]);
  t.equal(curl.stdout, '200', 'curl on 127.0.0.1 needs no login');
  const epg = await run('curl', [
    '-s',
    '-o',
    '/dev/null',
    '-w',
    '%{http_code}',
    `http://127.0.0.1:${epgPort}/xmltv`,
  ]);
  t.equal(epg.stdout, '200', 'nor at the EPG server');
  const play = await fetch(`${admin}/gated/index.m3u8`);
  await play.arrayBuffer();
  t.not(play.status, 401, 'nor at the viewer gate');
  t.ok(server.proc.exitCode === null, 'the server kept running');
});
