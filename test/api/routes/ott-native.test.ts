// Native live delivery through the real server (docs/ott.md): a player's keep-alive connection
// gets live HLS-TS playlists and segments from the native engine with the bytes and headers of
// the app's path; an API request on the same connection moves it to Node; the responses are
// counted in the request metrics and shown in the http-server status; `native-delivery: false`
// leaves every connection with Node.
import { execFileSync } from 'node:child_process';
import t from 'tap';
import {
  deliveryStatus,
  firstLiveSegment,
  liveTsConfig,
  PLAYBACK_HEADERS,
} from '../../helpers/ott.ts';
import { RawClient } from '../../helpers/raw-http.ts';
import { startServer, waitFor } from '../../helpers/server.ts';

const SAME_HEADERS = [...PLAYBACK_HEADERS, 'connection', 'keep-alive'];
const OK_COUNT = /sluice_api_requests_total\{method="GET",route="\/:name\/\*",status="200"\} (\d+)/;

const get = (path: string, extra = '') => `GET ${path} HTTP/1.1\r\nHost: 127.0.0.1\r\n${extra}\r\n`;

t.test('a player connection is served natively, as the app would', async (t) => {
  // A max-age other than the default: both paths must send the configured one.
  const srv = await startServer(t, { config: liveTsConfig({ 'segment-cache-max-age': 60 }) });
  const uri = await firstLiveSegment(srv.url, '?x=1');
  const before = await deliveryStatus(srv.url);
  t.ok(before, 'the http-server status shows the engine');
  const count = async () =>
    Number(OK_COUNT.exec(await (await fetch(`${srv.url}/metrics`)).text())?.[1] ?? 0);
  const counted = await count();

  const app = await RawClient.open(srv.port);
  t.teardown(() => app.close());
  // Segments committed before the stream's name was routed are published at the store's next
  // change, and a connection whose request Node answered stays with Node: try on a fresh
  // connection until the engine answers (its served count moves).
  let player: RawClient | undefined;
  let seg: Awaited<ReturnType<RawClient['next']>> | undefined;
  await waitFor(
    'the engine answering the segment',
    async () => {
      const was = (await deliveryStatus(srv.url))!.served;
      const c = await RawClient.open(srv.port);
      t.teardown(() => c.close());
      c.send(get(`/live/${uri}`));
      seg = await c.next();
      if ((await deliveryStatus(srv.url))!.served === was) return undefined;
      player = c;
      return true;
    },
    10_000,
  );
  if (!player || !seg) throw new Error('unreachable');
  app.send(get(`/live/${uri}?x=1`));
  const appSeg = await app.next();
  t.equal(seg.status, 200);
  t.ok(seg.body.length > 0 && seg.body.equals(appSeg.body), 'same bytes as the app path');
  for (const h of SAME_HEADERS) t.equal(seg.headers.get(h), appSeg.headers.get(h), h);
  t.equal(
    seg.headers.get('cache-control'),
    'public, max-age=60, immutable',
    'the configured max-age',
  );

  for (const file of ['index.m3u8', 'ts.m3u8']) {
    const was = (await deliveryStatus(srv.url))!.served;
    player.send(get(`/live/${file}`));
    const a = await player.next();
    app.send(get(`/live/${file}?x=1`));
    const b = await app.next();
    t.equal((await deliveryStatus(srv.url))!.served, was + 1, `${file}: answered natively`);
    t.match(a.body.toString(), /^#EXTM3U/, `${file}: a playlist`);
    if (
      a.body.toString().match(/MEDIA-SEQUENCE:\d+/)?.[0] ===
      b.body.toString().match(/MEDIA-SEQUENCE:\d+/)?.[0]
    )
      t.equal(a.body.toString(), b.body.toString(), `${file}: same text as the app path`);
    for (const h of SAME_HEADERS.filter((x) => x !== 'content-length' && x !== 'accept-ranges'))
      t.equal(a.headers.get(h), b.headers.get(h), `${file}: ${h}`);
  }
  t.ok((await count()) > counted, 'native responses counted in the request metrics');
  const metrics = await (await fetch(`${srv.url}/metrics`)).text();
  const nativeServed = (await deliveryStatus(srv.url))!.served;
  const exported = Number(/^sluice_live_delivery_responses_total (\d+)$/m.exec(metrics)?.[1]);
  t.ok(exported > 0 && exported <= nativeServed, `the engine's own metrics: ${exported} responses`);
  t.match(metrics, /^sluice_live_delivery_connections \d+$/m);
  t.match(metrics, /^sluice_live_delivery_bytes_total \d+$/m);
  t.match(metrics, /^sluice_live_delivery_handed_back_total \d+$/m);

  // `Range: bytes=0-` (ffmpeg and VLC send it): the app's 206 with the whole body, natively.
  const was = (await deliveryStatus(srv.url))!.served;
  player.send(get(`/live/${uri}`, 'Range: bytes=0-\r\n'));
  const ranged = await player.next();
  app.send(get(`/live/${uri}?x=1`, 'Range: bytes=0-\r\n'));
  const appRanged = await app.next();
  t.equal((await deliveryStatus(srv.url))!.served, was + 1, 'bytes=0-: answered natively');
  t.equal(ranged.status, 206);
  t.equal(appRanged.status, 206);
  t.ok(ranged.body.equals(appRanged.body), 'bytes=0-: the same whole body');
  for (const h of [...SAME_HEADERS, 'content-range'])
    t.equal(ranged.headers.get(h), appRanged.headers.get(h), `bytes=0-: ${h}`);

  // ffmpeg itself reading the live HLS: its requests are answered natively too.
  const beforeFfmpeg = (await deliveryStatus(srv.url))!.served;
  execFileSync('ffmpeg', [
    ...['-hide_banner', '-loglevel', 'error', '-i', `${srv.url}/live/index.m3u8`],
    ...['-t', '2', '-c', 'copy', '-f', 'null', '-'],
  ]);
  const byFfmpeg = (await deliveryStatus(srv.url))!.served - beforeFfmpeg;
  t.ok(byFfmpeg >= 3, `ffmpeg's playlist and segments natively: ${byFfmpeg} responses`);

  // An API request on the player's connection: Node answers it and keeps the connection.
  const handed = (await deliveryStatus(srv.url))!.handedBack;
  player.send(get('/data/status'));
  const st = await player.next();
  t.equal(st.status, 200);
  t.match(st.body.toString(), /"resources"/);
  t.equal((await deliveryStatus(srv.url))!.handedBack, handed + 1, 'handed back to Node');
  const served = (await deliveryStatus(srv.url))!.served;
  player.send(get('/live/index.m3u8'));
  t.match((await player.next()).body.toString(), /^#EXTM3U/, 'Node answers from then on');
  t.equal((await deliveryStatus(srv.url))!.served, served, 'not by the engine');
  // A segment that is not in the window: Node's 404, as before.
  player.send(get('/live/seg-0000000000.ts'));
  t.equal((await player.next()).status, 404);
});

t.test('native-delivery false: every connection stays with Node', async (t) => {
  const srv = await startServer(t, { config: liveTsConfig({ 'native-delivery': false }) });
  const uri = await firstLiveSegment(srv.url);
  const r = await fetch(`${srv.url}/live/${uri}`);
  t.equal(r.status, 200);
  await r.arrayBuffer();
  t.equal(await deliveryStatus(srv.url), undefined, 'no engine on this listener');
});
