// Viewer authorisation through the real server: a billing server in the test decides; a
// viewer with a good token plays HLS (ffprobe follows the playlist's URIs, which carry the
// token), DASH and HTTP-TS; a bad token or none is refused on the playlist and on a segment
// URL fetched directly, on a fresh connection and on one the native engine would hold; the
// session is listed, counted in /metrics and ended by DELETE; the native engine answers only
// the viewers the gate gave a pass; switching billing off opens it to everyone again.
import { execFile } from 'node:child_process';
import { writeFile } from 'node:fs/promises';
import { promisify } from 'node:util';
import t from 'tap';
import { tokenFingerprint } from '../../src/util/credentials.ts';
import { startBilling } from '../helpers/billing.ts';
import { deliveryStatus, liveTsConfig } from '../helpers/ott.ts';
import { RawClient } from '../helpers/raw-http.ts';
import { loopbackServers, startServer, waitFor } from '../helpers/server.ts';

const run = promisify(execFile);
const get = (path: string) => `GET ${path} HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n`;
/** An address on the loopback interface that is not 127.0.0.1, so not anonymous. */
const REMOTE = '127.0.0.2';

t.test('authorised and refused viewers on every delivery path', async (t) => {
  const billing = await startBilling((r) =>
    r.query.get('event') !== 'auth'
      ? { status: 200 }
      : r.query.get('token') === 'good'
        ? { status: 200, type: 'application/json', body: '{"allowed":true}' }
        : {
            status: 403,
            type: 'application/json',
            body: '{"allowed":false,"reason":"no subscription"}',
          },
  );
  t.teardown(billing.close);
  const base = liveTsConfig();
  const stream = (base.stream as Record<string, unknown>[])[0]!;
  stream['ott-hls'] = 3;
  stream['ott-http'] = 1;
  const config = {
    ...base,
    cs: {
      'session-idle-sec': 30,
      server: [
        { id: 1, name: 'billing', password: 'k', url: billing.url, 'response-format': 'json' },
      ],
    },
  };
  const srv = await startServer(t, { config });
  const url = (p: string) => `${srv.url}/live/${p}`;

  const playlist = await waitFor(
    'the live playlist',
    async () => {
      const res = await fetch(url('index.m3u8?token=good'));
      return res.status === 200 ? res.text() : undefined;
    },
    30_000,
  );
  const segment = playlist.split('\n').find((l) => l.startsWith('seg-'));
  t.match(segment, /^seg-[0-9a-f]+\.ts\?token=good$/, 'segment URIs carry the token');
  const bare = segment!.split('?')[0]!;

  t.test('a good token plays HLS, DASH and HTTP-TS', async (t) => {
    const seg = await fetch(url(segment!));
    t.equal(seg.status, 200);
    t.equal(seg.headers.get('content-type'), 'video/mp2t');
    const probe = await run('ffprobe', [
      '-v',
      'error',
      '-show_entries',
      'stream=codec_name',
      '-of',
      'csv=p=0',
      url('index.m3u8?token=good'),
    ]);
    t.match(probe.stdout, /h264/, 'ffprobe follows the playlist with the token');
    const mpd = await waitFor(
      'the MPD',
      async () => {
        const r = await fetch(url('index.mpd?token=good'));
        return r.status === 200 ? r.text() : undefined;
      },
      20_000,
    );
    t.match(mpd, /media="[^"]*\?token=good"/, 'DASH segment template carries the token');
    t.match(mpd, /initialization="[^"]*\?token=good"/);
    const cmaf = await (await fetch(url('cmaf.m3u8?token=good'))).text();
    for (const line of cmaf.split('\n').filter((l) => l && !l.startsWith('#')))
      t.match(line, /token=good/, `master URI ${line}`);
    const ts = await fetch(url('mpegts?token=good'));
    t.equal(ts.status, 200);
    const reader = ts.body!.getReader();
    const first = await reader.read();
    t.equal(first.value?.[0], 0x47, 'HTTP-TS bytes flow');
    await reader.cancel();
  });

  t.test('a bad token or none is refused everywhere', async (t) => {
    for (const p of [
      'index.m3u8?token=bad',
      `${bare}?token=bad`,
      'index.mpd?token=bad',
      'mpegts?token=bad',
    ]) {
      const res = await fetch(url(p));
      t.equal(res.status, 403, `${p}: 403`);
      t.equal(res.headers.get('access-control-allow-origin'), '*', `${p}: readable cross-origin`);
      t.same(await res.json(), { status: 403, message: 'Refused by billing: no subscription' });
    }
    // Without credentials, from an address that is not loopback-anonymous: not the fast path,
    // not the native engine, on a fresh keep-alive connection and on the same one again.
    const c = await RawClient.open(srv.port, REMOTE);
    t.teardown(() => c.close());
    for (const p of [`/live/${bare}`, '/live/index.m3u8', `/live/${bare}`, '/live/ts.m3u8']) {
      c.send(get(p));
      const r = await c.next();
      t.equal(r.status, 401, `${p} without a token from ${REMOTE}: 401`);
      t.match(r.body.toString(), /token/);
    }
    // 127.0.0.1 stays anonymous (cs.loopback-anonymous).
    t.equal((await fetch(url(bare))).status, 200, 'loopback without a token plays');
  });

  t.test('the native engine answers a viewer it gave a pass, and no one else', async (t) => {
    // The first request is judged by the app, which gives the engine a pass for this
    // query, address and stream; a fresh connection is the engine's from its first request.
    const first = await RawClient.open(srv.port, REMOTE);
    t.teardown(() => first.close());
    first.send(get('/live/index.m3u8?token=good'));
    t.equal((await first.next()).status, 200);
    t.ok((await deliveryStatus(srv.url))!.entries > 0, 'published while billing is on');
    const seen = await waitFor('the engine answering the viewer', async () => {
      const was = (await deliveryStatus(srv.url))!.served;
      const c = await RawClient.open(srv.port, REMOTE);
      t.teardown(() => c.close());
      c.send(get(`/live/${bare}?token=good`));
      const r = await c.next();
      if (r.status !== 200) throw new Error(`status ${r.status}`);
      return (await deliveryStatus(srv.url))!.served > was ? c : undefined;
    });
    {
      const was = (await deliveryStatus(srv.url))!.served;
      seen.send(get(`/live/${bare}?token=good`));
      t.equal((await seen.next()).status, 200, 'segment: 200');
      t.equal((await deliveryStatus(srv.url))!.served, was + 1, 'segment: answered natively');
    }
    // The same connection with another token: handed to Node, which refuses.
    const backs = (await deliveryStatus(srv.url))!.handedBack;
    seen.send(get(`/live/${bare}?token=bad`));
    t.equal((await seen.next()).status, 403, "another token on the engine's connection: 403");
    t.ok((await deliveryStatus(srv.url))!.handedBack > backs, 'the engine gave it back');
    const fresh = await RawClient.open(srv.port, REMOTE);
    t.teardown(() => fresh.close());
    fresh.send(get(`/live/${bare}`));
    t.equal((await fresh.next()).status, 401, 'no token on a fresh connection: 401');
    {
      const pl = await RawClient.open(srv.port, REMOTE);
      t.teardown(() => pl.close());
      // The playlist names its URIs with the viewer's token: the app writes it, never the
      // engine's published copy (whose URIs are bare; a remote player would then be refused).
      const was = (await deliveryStatus(srv.url))!.served;
      pl.send(get('/live/index.m3u8?token=good'));
      const r = await pl.next();
      t.equal(r.status, 200, 'playlist: 200');
      t.match(
        r.body.toString(),
        /^seg-[0-9a-f]+\.ts\?token=good$/m,
        'playlist URIs carry the token',
      );
      t.notMatch(r.body.toString(), /^seg-[0-9a-f]+\.ts$/m, 'no bare URI');
      t.equal((await deliveryStatus(srv.url))!.served, was, 'playlist: answered by the app');
    }
    // The engine's answers count in the session (folded in each second).
    const mine = await waitFor('native requests in the session', async () => {
      const list = (await (await fetch(`${srv.url}/data/sessions?stream=live`)).json()) as {
        sessions: { ip: string; requests: number; bytes: number }[];
      };
      const s = list.sessions.find((x) => x.ip === REMOTE);
      return s && s.requests >= 4 ? s : undefined;
    });
    t.ok(mine.bytes > 0, `${mine.requests} requests, ${mine.bytes} bytes`);
  });

  t.test('sessions: listed, counted, accounted, ended by DELETE', async (t) => {
    const c = await RawClient.open(srv.port, REMOTE);
    t.teardown(() => c.close());
    c.send(get(`/live/${bare}?token=good`));
    t.equal((await c.next()).status, 200);
    const list = (await (await fetch(`${srv.url}/data/sessions`)).json()) as {
      authorising: boolean;
      sessions: { id: string; viewer: string; ip: string; stream: string; bytes: number }[];
    };
    t.ok(list.authorising);
    const mine = list.sessions.find((s) => s.ip === REMOTE);
    t.match(mine, { viewer: tokenFingerprint('good'), credential: 'token', stream: 'live' });
    t.ok(mine!.bytes > 0, `${mine!.bytes} bytes counted`);
    const metrics = await (await fetch(`${srv.url}/metrics`)).text();
    t.match(metrics, /sluice_viewer_sessions\{stream="live"\} 2/, 'two sessions (two addresses)');
    t.match(metrics, /sluice_billing_cache_hits_total \d+/);
    const start = billing.events('start').find((r) => r.query.get('ip') === REMOTE);
    t.ok(start, 'start notification sent');
    t.equal(start!.query.get('session'), mine!.id);

    const del = await fetch(`${srv.url}/data/sessions/${mine!.id}`, { method: 'DELETE' });
    t.equal(del.status, 200);
    c.send(get(`/live/${bare}?token=good`));
    const after = await c.next();
    t.equal(after.status, 403, 'the next segment is refused');
    t.match(after.body.toString(), /ended by the operator/);
    const [stop] = await billing.waitFor(
      (r) => r.query.get('event') === 'stop' && r.query.get('session') === mine!.id,
    );
    t.ok(Number(stop!.query.get('bytes')) >= mine!.bytes, 'stop carries the bytes');
    t.equal(
      (await fetch(`${srv.url}/data/sessions/${mine!.id}`, { method: 'DELETE' })).status,
      404,
    );
  });

  t.test('billing off: the native engine serves again', async (t) => {
    const doc = loopbackServers({ ...base, stream: [stream] }, srv.port, 0);
    const current = (await (await fetch(`${srv.url}/config`)).json()) as Record<string, unknown>;
    await writeFile(
      srv.configPath!,
      JSON.stringify({ ...current, cs: undefined, stream: doc.stream }),
    );
    const c = await waitFor(
      'playback without a token',
      async () => {
        const c = await RawClient.open(srv.port, REMOTE);
        t.teardown(() => c.close());
        c.send(get('/live/index.m3u8'));
        return (await c.next()).status === 200 ? c : undefined;
      },
      20_000,
    );
    const was = (await deliveryStatus(srv.url))!.served;
    c.send(get(`/live/${bare}`));
    t.equal((await c.next()).status, 200, 'no token needed');
    t.equal((await deliveryStatus(srv.url))!.served, was + 1, 'the engine answers it');
  });
});

t.test(
  'with the native engine off (native-delivery: false), the app path refuses the same',
  async (t) => {
    const billing = await startBilling((r) => ({
      status: r.query.get('event') !== 'auth' || r.query.get('token') === 'good' ? 200 : 403,
    }));
    t.teardown(billing.close);
    const srv = await startServer(t, {
      config: {
        ...liveTsConfig({ 'native-delivery': false }),
        cs: { server: [{ id: 1, name: 'billing', password: 'k', url: billing.url }] },
      },
    });
    const playlist = await waitFor(
      'the live playlist',
      async () => {
        const res = await fetch(`${srv.url}/live/index.m3u8?token=good`);
        return res.status === 200 ? res.text() : undefined;
      },
      30_000,
    );
    const bare = playlist
      .split('\n')
      .find((l) => l.startsWith('seg-'))!
      .split('?')[0]!;
    const c = await RawClient.open(srv.port, REMOTE);
    t.teardown(() => c.close());
    const cases: [string, number][] = [
      [`/live/${bare}?token=good`, 200],
      [`/live/${bare}?token=bad`, 403],
      [`/live/${bare}`, 401],
      ['/live/index.m3u8?token=bad', 403],
      ['/live/index.m3u8?token=good', 200],
    ];
    for (const [p, status] of cases) {
      c.send(get(p));
      t.equal((await c.next()).status, status, `${p}: ${status}`);
    }
    t.notOk(await deliveryStatus(srv.url), 'no native engine on this server');
  },
);
