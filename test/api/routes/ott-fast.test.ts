// The live HLS-TS fast path (src/api/routes/ott-fast.ts) through the real server: a plain GET
// of a live segment or TS playlist is answered before Fastify with the same bytes and headers as
// the app's own path (reached here with a query string), is counted in the request metrics, and
// leaves ranges, HEAD (with the real Content-Length), the CORS preflight, queries and unknown
// segments to the app.
import t from 'tap';
import { firstLiveSegment, liveTsConfig, PLAYBACK_HEADERS } from '../../helpers/ott.ts';
import { startServer } from '../../helpers/server.ts';

/** The headers both paths must agree on (Fastify lower-cases, node:http keeps the case). */
const SAME_HEADERS = PLAYBACK_HEADERS;

const OK_COUNT = /sluice_api_requests_total\{method="GET",route="\/:name\/\*",status="200"\} (\d+)/;

t.test('live TS segments: fast path and app path agree', async (t) => {
  // Native delivery off: these requests are the JavaScript fast path's (with it on, the
  // native engine answers them on connections it holds: ott-native.test.ts).
  const srv = await startServer(t, { config: liveTsConfig({ 'native-delivery': false }) });
  const uri = await firstLiveSegment(srv.url);
  const count = async () =>
    Number(OK_COUNT.exec(await (await fetch(`${srv.url}/metrics`)).text())?.[1] ?? 0);

  const before = await count();
  const fast = await fetch(`${srv.url}/live/${uri}`);
  const fastBody = Buffer.from(await fast.arrayBuffer());
  // A query string takes the app's route (live parameters are handled there).
  const app = await fetch(`${srv.url}/live/${uri}?x=1`);
  const appBody = Buffer.from(await app.arrayBuffer());
  t.equal(fast.status, 200);
  t.equal(app.status, 200);
  t.ok(fastBody.length > 0 && fastBody.equals(appBody), 'same bytes on both paths');
  for (const h of SAME_HEADERS) t.equal(fast.headers.get(h), app.headers.get(h), h);
  t.equal(
    fast.headers.get('cache-control'),
    'public, max-age=86400, immutable',
    'the default max-age',
  );
  t.equal(await count(), before + 2, 'both requests counted in the request metrics');

  for (const file of ['index.m3u8', 'ts.m3u8']) {
    const fastPl = await fetch(`${srv.url}/live/${file}`);
    const appPl = await fetch(`${srv.url}/live/${file}?x=1`);
    const [a, b] = [await fastPl.text(), await appPl.text()];
    t.match(a, /^#EXTM3U/, `${file}: a playlist`);
    // The window may move between the two requests: compare only when it did not.
    if (a.match(/MEDIA-SEQUENCE:\d+/)?.[0] === b.match(/MEDIA-SEQUENCE:\d+/)?.[0])
      t.equal(a, b, `${file}: same text on both paths`);
    for (const h of SAME_HEADERS.filter((x) => x !== 'content-length' && x !== 'accept-ranges'))
      t.equal(fastPl.headers.get(h), appPl.headers.get(h), `${file}: ${h}`);
    t.match(fastPl.headers.get('cache-control'), /^public, max-age=\d+$/);
  }

  const range = await fetch(`${srv.url}/live/${uri}`, { headers: { Range: 'bytes=0-187' } });
  t.equal(range.status, 206, 'a range goes to the app');
  t.equal((await range.arrayBuffer()).byteLength, 188);
  const head = await fetch(`${srv.url}/live/${uri}`, { method: 'HEAD' });
  t.equal(head.status, 200);
  t.equal(head.headers.get('content-length'), String(fastBody.length), 'HEAD has the length');
  t.equal((await head.arrayBuffer()).byteLength, 0, 'HEAD has no body');
  const pre = await fetch(`${srv.url}/live/${uri}`, {
    method: 'OPTIONS',
    headers: { Origin: 'http://example.test', 'Access-Control-Request-Method': 'GET' },
  });
  t.equal(pre.status, 204, 'the CORS preflight is answered');
  t.equal(pre.headers.get('access-control-allow-origin'), '*');
  const gone = await fetch(`${srv.url}/live/seg-00000000000000000000.ts`);
  t.equal(gone.status, 404, 'a segment not in the window is 404');
  t.match(await gone.json(), { status: 404 });
  const other = await fetch(`${srv.url}/nosuch/${uri}`);
  t.equal(other.status, 404, 'an unknown name is 404');
  await other.arrayBuffer();
});
