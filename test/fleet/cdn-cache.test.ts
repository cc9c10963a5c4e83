// A cache in front of a node, run from the reference config (deploy/nginx/sluice-cache.conf)
// with real nginx: 100 players through it cost the origin one request per segment and one
// playlist request per max-age (half a target duration, docs/fleet.md); viewer tokens keep
// their meaning through it (a playlist written for one viewer is never kept or served to
// another; a request the cache forwards is not an anonymous local one); and an edge node pulls
// a stream from the origin and serves it at the same URLs.
import { execFile } from 'node:child_process';
import { readFileSync } from 'node:fs';
import http from 'node:http';
import { join } from 'node:path';
import { promisify } from 'node:util';
import t from 'tap';
import { startBilling } from '../helpers/billing.ts';
import { runNginx } from '../helpers/nginx.ts';
import { liveTsConfig } from '../helpers/ott.ts';
import { freePort, REPO_ROOT, startServer, waitFor } from '../helpers/server.ts';
import type { TapLike } from '../helpers/stream-host.ts';

const run = promisify(execFile);
const REFERENCE = join(REPO_ROOT, 'deploy/nginx/sluice-cache.conf');
/** Target duration of the test stream, s: live documents are kept max(1, 2/2) = 1 s. */
const TARGET = 2;
const PLAYLIST_MAX_AGE = 1;
const PLAYERS = 100;
const PLAY_MS = 10_000;

/** The reference config with its three EDIT values replaced (each must be there once). */
function referenceConfig(prefix: string, originPort: number, port: number): string {
  let text = readFileSync(REFERENCE, 'utf8');
  const edits: [string, string][] = [
    ['/var/cache/nginx/sluice', join(prefix, 'cache')],
    ['server 127.0.0.1:43981;', `server 127.0.0.1:${originPort};`],
    ['listen 8080;', `listen 127.0.0.1:${port};`],
  ];
  for (const [from, to] of edits) {
    if (text.split(from).length !== 2) throw new Error(`${REFERENCE}: "${from}" not there once`);
    text = text.replace(from, to);
  }
  return text;
}

async function cacheInFront(t: TapLike, originPort: number) {
  const port = await freePort();
  return runNginx(t, port, (prefix) => referenceConfig(prefix, originPort, port));
}

/** An HTTP proxy that counts what reaches the origin, per request target. */
async function countingProxy(t: TapLike, originPort: number) {
  const counts = new Map<string, number>();
  const agent = new http.Agent({ keepAlive: true, maxSockets: 64 });
  const server = http.createServer((req, res) => {
    counts.set(req.url!, (counts.get(req.url!) ?? 0) + 1);
    const up = http.request(
      {
        host: '127.0.0.1',
        port: originPort,
        path: req.url,
        method: req.method,
        headers: req.headers,
        agent,
      },
      (r) => {
        res.writeHead(r.statusCode!, r.headers);
        r.pipe(res);
      },
    );
    up.on('error', () => res.destroy());
    req.pipe(up);
  });
  const port = await freePort();
  await new Promise<void>((r) => server.listen(port, '127.0.0.1', r));
  t.teardown(() => {
    agent.destroy();
    server.closeAllConnections();
    return new Promise<void>((r) => server.close(() => r()));
  });
  return { port, counts };
}

function liveConfig(): Record<string, unknown> {
  const config = liveTsConfig();
  const stream = (config.stream as Record<string, unknown>[])[0]!;
  stream['ott-segment-duration'] = TARGET;
  stream['ott-http'] = 1;
  return config;
}

/** One player: reloads the playlist every half target duration (RFC 8216's least reload
 *  interval) and fetches each new segment once, until `until`. */
async function player(base: string, until: number, seen: { errors: string[]; requests: number }) {
  const have = new Set<string>();
  // Spread the start over one reload interval, as real audiences are.
  await new Promise((r) => setTimeout(r, Math.random() * 1000));
  while (Date.now() < until) {
    const pl = await fetch(`${base}/live/index.m3u8`);
    seen.requests++;
    if (pl.status !== 200) seen.errors.push(`playlist ${pl.status}`);
    const uris = (await pl.text()).split('\n').filter((l) => l.startsWith('seg-'));
    for (const uri of uris.slice(-2)) {
      if (have.has(uri)) continue;
      have.add(uri);
      const seg = await fetch(`${base}/live/${uri}`);
      seen.requests++;
      const body = await seg.arrayBuffer();
      if (seg.status !== 200 || body.byteLength === 0 || body.byteLength % 188 !== 0)
        seen.errors.push(`${uri}: ${seg.status}, ${body.byteLength} bytes`);
    }
    await new Promise((r) => setTimeout(r, (TARGET / 2) * 1000));
  }
}

t.test('100 players through the reference nginx cache', async (t) => {
  const srv = await startServer(t, { config: liveConfig() });
  const proxy = await countingProxy(t, srv.port);
  const cache = await cacheInFront(t, proxy.port);
  // Ready at the origin first (straight, not counted), so the count is the players' alone.
  await waitFor('the live playlist', async () => {
    const r = await fetch(`${srv.url}/live/index.m3u8`);
    return r.status === 200 && (await r.text()).includes('seg-') ? true : undefined;
  });

  const first = await fetch(`${cache.base}/live/index.m3u8`);
  t.equal(first.headers.get('cache-control'), `public, max-age=${PLAYLIST_MAX_AGE}`);
  await first.text();

  const seen = { errors: [] as string[], requests: 0 };
  const start = Date.now();
  await Promise.all(
    Array.from({ length: PLAYERS }, () => player(cache.base, start + PLAY_MS, seen)),
  );
  const elapsed = (Date.now() - start) / 1000;
  t.same(seen.errors, [], 'every player got every playlist and segment whole');
  t.ok(seen.requests > PLAYERS * 5, `${seen.requests} player requests`);

  const segments = [...proxy.counts].filter(([url]) => url.startsWith('/live/seg-'));
  t.ok(segments.length >= 3, `${segments.length} segments fetched`);
  const twice = segments.filter(([, n]) => n > 1);
  t.same(twice, [], 'the origin sent each segment once');
  const playlist = proxy.counts.get('/live/index.m3u8') ?? 0;
  // At most one origin fetch per max-age, plus the first miss and the one in flight at the end.
  const bound = Math.ceil(elapsed / PLAYLIST_MAX_AGE) + 2;
  t.ok(
    playlist <= bound,
    `the origin sent the playlist ${playlist} times in ${elapsed} s (≤ ${bound})`,
  );
  t.ok(playlist >= 2, 'and it was fetched again as it expired');
});

t.test('viewer tokens through the cache', async (t) => {
  const billing = await startBilling((r) =>
    r.query.get('event') !== 'auth'
      ? { status: 200 }
      : ['a', 'b'].includes(r.query.get('token') ?? '')
        ? { status: 200, type: 'application/json', body: '{"allowed":true}' }
        : { status: 403, type: 'application/json', body: '{"allowed":false}' },
  );
  t.teardown(billing.close);
  const config = {
    ...liveConfig(),
    cs: {
      server: [
        { id: 1, name: 'billing', password: 'k', url: billing.url, 'response-format': 'json' },
      ],
    },
  };
  const srv = await startServer(t, { config });
  const cache = await cacheInFront(t, srv.port);
  const via = (p: string) => fetch(`${cache.base}/live/${p}`);

  const playlistA = await waitFor('a playlist for viewer a', async () => {
    const r = await via('index.m3u8?token=a');
    const text = await r.text();
    return r.status === 200 && text.includes('seg-') ? { r, text } : undefined;
  });
  t.equal(playlistA.r.headers.get('cache-control'), 'private, no-cache', "a viewer's playlist");
  t.match(playlistA.text, /^seg-[0-9a-f]+\.ts\?token=a$/m, 'names its URIs with the token');
  const again = await via('index.m3u8?token=a');
  t.not(again.headers.get('x-cache-status'), 'HIT', 'the cache did not keep it');
  await again.text();
  const b = await (await via('index.m3u8?token=b')).text();
  t.notMatch(b, /token=a/, "viewer b never gets a's playlist");
  t.match(b, /\?token=b$/m);

  const seg = playlistA.text.match(/^seg-[0-9a-f]+\.ts\?token=a$/m)![0];
  const s1 = await via(seg);
  await s1.arrayBuffer();
  const s2 = await via(seg);
  await s2.arrayBuffer();
  t.equal(s2.status, 200);
  t.equal(s2.headers.get('x-cache-status'), 'HIT', 'a segment is kept under its own URL');

  // nginx connects from 127.0.0.1 but says whom it forwards for: not an anonymous local client.
  const bare = seg.split('?')[0]!;
  t.equal((await via('index.m3u8')).status, 401, 'no token through the cache: 401');
  t.equal((await via(bare)).status, 401, 'a bare segment URL through the cache: 401');
  t.equal((await via('index.m3u8?token=x')).status, 403, 'a refused token: 403');
  t.equal((await fetch(`${srv.url}/live/index.m3u8`)).status, 200, 'local, not forwarded: plays');
  const admin = await fetch(`${cache.base}/data/status`);
  t.equal(admin.status, 401, 'the admin API through the cache asks for an account');
  t.equal((await fetch(`${srv.url}/data/status`)).status, 200, 'local admin still anonymous');
});

t.test('an edge node serves the origin stream at the same URLs', async (t) => {
  const origin = await startServer(t, { config: liveConfig() });
  const edge = await startServer(t, {
    config: {
      stream: [
        {
          id: 1,
          'stream-name': 'live',
          pause: false,
          'ott-hls': 1,
          'ott-segment-duration': TARGET,
          input: [{ type: 'hls', uri: `${origin.url}/live/mpegts`, mode: 2 }],
        },
      ],
    },
  });
  await waitFor(
    'the edge playlist',
    async () => {
      const r = await fetch(`${edge.url}/live/index.m3u8`);
      return r.status === 200 && (await r.text()).includes('seg-') ? true : undefined;
    },
    40_000,
  );
  const probe = await run('ffprobe', [
    '-v',
    'error',
    '-show_entries',
    'stream=codec_name',
    '-of',
    'csv=p=0',
    `${edge.url}/live/index.m3u8`,
  ]);
  t.match(probe.stdout, /h264/, 'ffprobe plays the edge');
});
