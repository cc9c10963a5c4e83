// Only GET and HEAD deliver (issue 35, item 1). The real server with a billing server that
// refuses everyone: a client at 127.0.0.2 (not the anonymous loopback) sends every method of a
// list, unusual ones included, to every OTT path — the media routes of the OpenAPI document for
// every stream and group name, and every URI their live and archive documents hand out. GET and
// HEAD are judged by billing (refused); no other method gets a media byte, asks billing or opens
// a session; a CORS preflight is 204 with no body. The native live engine, which holds those
// connections first, answers only GET.
import { writeFile } from 'node:fs/promises';
import http from 'node:http';
import { join } from 'node:path';
import t from 'tap';
import { LiveDelivery } from '../../../src/native/live-http.ts';
import { startBilling } from '../../helpers/billing.ts';
import { deliveryStatus, liveTsConfig, makeTestStream } from '../../helpers/ott.ts';
import { ask, crawl, type Found, type RawAnswer } from '../../helpers/ott-walk.ts';
import { startServer, tempDir, waitFor } from '../../helpers/server.ts';
import { muxTeletext } from '../../helpers/teletext.ts';

const READY_MS = 90_000;
/** A loopback address that is not the anonymous one (src/util/loopback.ts): a remote viewer. */
const REMOTE = '127.0.0.2';
const PREFLIGHT = { Origin: 'http://player.test', 'Access-Control-Request-Method': 'GET' };
/** Methods that must never deliver, as a client sends them (Node's parser refuses some). */
const OTHER_METHODS = [
  ['OPTIONS', {}],
  ['OPTIONS', { ...PREFLIGHT, 'Access-Control-Request-Headers': 'range' }],
  ['OPTIONS', { ...PREFLIGHT, 'Access-Control-Request-Method': 'POST' }],
  ...[
    'POST',
    'PUT',
    'PATCH',
    'DELETE',
    'TRACE',
    'QUERY',
    'CONNECT',
    'PROPFIND',
    'PURGE',
    'SEARCH',
    'LOCK',
    'MKCOL',
    'BREW',
    'get',
  ].map((m) => [m, {}]),
] as [string, Record<string, string>][];
const MEDIA_TYPE = /video|audio|image|mpegurl|dash|text\/vtt|mp2t|octet/;

/** What both streams carry: every packaging, and a DVR storage. */
const PACKAGED = { 'ott-hls': 3, 'ott-segment-duration': 1, 'dvr-storage': 1 };

t.test('only GET and HEAD deliver, on every OTT path', async (t) => {
  const billing = await startBilling(() => ({ status: 403, body: 'refused' }));
  t.teardown(billing.close);
  const dir = await tempDir(t, 'sluice-ott-methods-');
  // Subtitles for the WebVTT paths: a teletext page in a looped file.
  const video = await makeTestStream(join(dir, 'v.ts'), { seconds: 6 });
  const rows = [{ row: 20, text: 'Subtitle' }];
  const pages = [1, 3, 5].map((at) => ({ at, rows }));
  const subs = muxTeletext(video, {
    pid: 0x130,
    magazine: 8,
    pageByte: 0x88,
    language: 'eng',
    pages,
  });
  await writeFile(join(dir, 'subs.ts'), subs.ts);
  // The test generator's stream `live` (test/helpers/ott.ts), packaged every way.
  const [live] = liveTsConfig().stream as Record<string, unknown>[];
  const srv = await startServer(t, {
    config: {
      cs: { server: [{ id: 1, name: 'billing', password: 'k', url: billing.url }] },
      mosaic: { enable: true, 'refresh-sec': 1, 'thumbnail-width': 96 },
      'dvr-storage-list': { storage: [{ id: 1, name: 'disk', 'dir-path': join(dir, 'store') }] },
      stream: [
        { ...live, ...PACKAGED, 'ott-http': 1 },
        {
          id: 2,
          'stream-name': 'subs',
          pause: false,
          ...PACKAGED,
          'ott-webvtt': true,
          input: [{ type: 'file', 'file-path': join(dir, 'subs.ts') }],
        },
      ],
      'stream-adaptive': [{ id: 1, 'stream-name': 'abr', streams: [1], 'ott-hls': 3 }],
    },
  });
  const get = async (path: string) => {
    const r = await fetch(`${srv.url}${path}`);
    return r.ok ? r.text() : undefined;
  };
  const count = (text: string | undefined, re: RegExp) => (text?.match(re) ?? []).length;
  await waitFor(
    'live, archive, subtitles, group and thumbnail',
    async () => {
      const ready = [
        count(await get('/live/index.m3u8'), /#EXTINF/g) >= 3,
        count(await get('/live/index.m3u8?t=0'), /#EXTINF/g) >= 2,
        count(await get('/subs/cmaf.m3u8'), /TYPE=SUBTITLES/g) >= 1,
        count(await get('/subs/index.m3u8?t=0'), /TYPE=SUBTITLES/g) >= 1,
        count(await get('/abr/cmaf.m3u8'), /#EXT-X-STREAM-INF/g) >= 1,
        (await fetch(`${srv.url}/live/preview.jpg`)).headers.get('content-type') === 'image/jpeg',
      ];
      return ready.every(Boolean) || undefined;
    },
    READY_MS,
  );

  // The routes, from the OpenAPI document: the OTT catch-all (tag `ott`) once per name the OTT
  // router holds, and every fixed path whose GET answers media to the anonymous loopback.
  const doc = (await (await fetch(`${srv.url}/openapi.json`)).json()) as {
    paths: Record<string, Record<string, { tags?: string[] }>>;
  };
  const ottRoutes = Object.entries(doc.paths)
    .filter(([, ops]) => Object.values(ops).some((o) => o.tags?.includes('ott')))
    .map(([p]) => p);
  t.same(ottRoutes, ['/{name}/{*}'], 'the OTT routes');
  const mediaRoutes: string[] = [];
  for (const [p, ops] of Object.entries(doc.paths)) {
    if (p.includes('{') || !ops.get) continue;
    const a = await ask(srv.port, 'GET', p);
    if (MEDIA_TYPE.test(a.headers.get('content-type') ?? '')) mediaRoutes.push(p);
  }
  t.same(mediaRoutes, ['/data/mosaic.jpg'], 'the fixed paths that serve media');
  const status = (await (await fetch(`${srv.url}/data/status`)).json()) as {
    resources: { kind: string; name?: string; status?: Record<string, unknown> }[];
  };
  const names = status.resources
    .filter((r) => r.kind === 'stream' || r.kind === 'stream-adaptive')
    .map((r) => String(r.status?.name ?? r.name));
  t.same(names.sort(), ['abr', 'live', 'subs'], 'the names the OTT router holds');

  // Every name's paths: its documents (live and archive) and all they hand out.
  const archiveAt = Math.floor(Date.now() / 1000) - 60;
  const seeds = [
    'mpegts',
    'preview.jpg',
    'time',
    ...['index.m3u8', 'ts.m3u8', 'cmaf.m3u8', 'index.mpd'].flatMap((d) => [d, `${d}?t=0`]),
    `archive-${archiveAt}-now.m3u8`,
    `index-${archiveAt}-120.mpd`,
    `index.m3u8?utc=${archiveAt}`,
    `index.m3u8?epg=${archiveAt}`,
    'no-such-file.ts',
  ];
  const paths: Found[] = mediaRoutes.map((path) => ({ path, archive: false }));
  for (const name of names) paths.push(...(await crawl(srv.url, name, seeds)));
  const kinds: [string, RegExp, boolean?][] = [
    ['HTTP-TS', /^\/live\/mpegts$/],
    ['a thumbnail', /^\/live\/preview\.jpg$/],
    ['a live TS segment', /^\/live\/seg-[0-9a-f]+\.ts$/],
    ['an LL-HLS part', /^\/live\/c\d+\/\d+\.\d+\.m4s/],
    ['an init segment', /\/init\.mp4/],
    ['a DASH MPD', /^\/live\/index\.mpd$/],
    ['a WebVTT segment', /^\/subs\/t\d+p[0-9a-f]+\/d?\d+\.vtt$/],
    ['an archive playlist', /^\/live\/.*m3u8\?t=/, true],
    ['an archive chunk', /^\/live\/(seg-|c\d+\/)/, true],
    ['an archive WebVTT chunk', /^\/subs\/t\d+p[0-9a-f]+\/.*vtt/, true],
    ['a group member path', /^\/abr\/live\//],
  ];
  for (const [what, re, archive] of kinds)
    t.ok(
      paths.some((p) => re.test(p.path) && (archive === undefined || p.archive === archive)),
      `the walk includes ${what}`,
    );
  t.comment(`${paths.length} paths × ${OTHER_METHODS.length + 2} methods`);

  const before = await deliveryStatus(srv.url);
  let n = 0;
  const leaks: string[] = [];
  const judged: string[] = [];
  const notJudged: string[] = [];
  const badPreflight: string[] = [];
  for (const { path } of paths) {
    const ott = !path.startsWith('/data/');
    const send = async (method: string, headers: Record<string, string> = {}) => {
      const token = `refused-${n++}`;
      const target = `${path}${path.includes('?') ? '&' : '?'}token=${token}`;
      const a = await ask(srv.port, method, target, headers, REMOTE);
      return { a, token, what: `${method} ${path}` };
    };
    for (const method of ['GET', 'HEAD']) {
      const { a, token, what } = await send(method);
      // The mosaic is admin-side: Digest, not billing.
      if (!ott) t.equal(a.status, 401, `${what}: the admin API's authentication`);
      else if (a.status !== 403 || !billing.requests.some((r) => r.query.get('token') === token))
        notJudged.push(`${what} → ${a.status}`);
      else judged.push(what);
    }
    for (const [method, headers] of OTHER_METHODS) {
      const { a, token, what } = await send(method, headers);
      if (carriesMedia(a))
        leaks.push(`${what} → ${a.status} ${a.headers.get('content-type')} ${a.body.length} B`);
      if (billing.requests.some((r) => r.query.get('token') === token))
        notJudged.push(`${what} asked billing`);
      const preflight = method === 'OPTIONS' && headers.Origin !== undefined;
      if (ott && preflight && !preflightOk(a)) badPreflight.push(`${what} → ${a.status}`);
    }
  }
  t.same(leaks, [], 'no method but GET and HEAD got a media byte');
  t.same(notJudged, [], 'billing judged every GET and HEAD and nothing else');
  t.same(badPreflight, [], 'every preflight: 204, no body, GET and HEAD allowed with Range');
  t.ok(judged.length > 0, `${judged.length} GET/HEAD refused by billing`);
  const sessions = (await (await fetch(`${srv.url}/data/sessions`)).json()) as {
    sessions: unknown[];
  };
  t.same(sessions.sessions, [], 'no viewer session opened');
  t.same(billing.events('start'), [], 'no accounting start');
  // Every connection went through the native engine first, which answered none of them.
  const after = await deliveryStatus(srv.url);
  if (before && after) {
    t.ok(after.adopted > before.adopted, 'the native engine held the connections');
    t.equal(after.served, before.served, 'and answered none of them');
  }

  // Without credentials, from the anonymous loopback: HEAD of HTTP-TS is headers, then the end.
  const head = await ask(srv.port, 'HEAD', '/live/mpegts');
  t.equal(head.status, 200, 'HEAD /live/mpegts from loopback');
  t.notOk(head.cut, 'HEAD of HTTP-TS ends at once');
  t.equal(head.body.length, 0, 'with no body');
});

/** A body that is anything but empty or a JSON error, or a response that did not end. */
function carriesMedia(a: RawAnswer): boolean {
  if (a.cut) return true;
  if (a.body.length === 0) return false;
  const type = a.headers.get('content-type') ?? '';
  if (MEDIA_TYPE.test(type) || !type.startsWith('application/json')) return true;
  try {
    return typeof (JSON.parse(a.body.toString()) as { status?: unknown }).status !== 'number';
  } catch {
    return true;
  }
}

function preflightOk(a: RawAnswer): boolean {
  const methods = a.headers.get('access-control-allow-methods') ?? '';
  return (
    a.status === 204 &&
    a.body.length === 0 &&
    a.headers.get('access-control-allow-origin') === '*' &&
    /\bGET\b/.test(methods) &&
    /\bHEAD\b/.test(methods) &&
    !/POST|PUT|DELETE|PATCH/.test(methods) &&
    /\brange\b/i.test(a.headers.get('access-control-allow-headers') ?? '')
  );
}

t.test('the native live engine answers GET only', async (t) => {
  const delivery = new LiveDelivery();
  const server = http.createServer((req, res) => {
    res.writeHead(200, { 'Content-Type': 'text/plain', Connection: 'close' });
    res.end(`node ${req.method}`);
  });
  const detach = delivery.attach(server);
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  t.teardown(async () => {
    detach();
    delivery.close();
    server.closeAllConnections();
    await new Promise((r) => server.close(r));
  });
  const port = (server.address() as { port: number }).port;
  const body = Buffer.from('segment bytes');
  delivery.publish(
    '/s/seg.ts',
    Buffer.from(
      `HTTP/1.1 200 OK\r\nContent-Type: video/mp2t\r\nContent-Length: ${body.length}\r\n`,
    ),
    body,
  );
  const got = await ask(port, 'GET', '/s/seg.ts');
  t.equal(got.body.toString(), 'segment bytes', 'GET is answered natively');
  t.equal(delivery.stats().served, 1);
  for (const [method, headers] of [['HEAD', {}], ...OTHER_METHODS] as typeof OTHER_METHODS) {
    const a = await ask(port, method, '/s/seg.ts', headers);
    t.notOk(a.body.includes('segment bytes'), `${method}: not from the engine (${a.status})`);
  }
  t.equal(delivery.stats().served, 1, 'the engine answered nothing but the GET');
});
