// XMLTV over HTTP as real servers misbehave: a 302 redirect is followed; a redirect loop and a
// refused connection say why in the source status; a server that stalls mid-body is given up
// after 60 s without data, and one that trickles a byte just inside that limit is given up once
// the download outlasts the update interval (manual clock) — either way the connection to it is
// closed. The previous data stays every time. A body sent with Content-Encoding gzip is decoded.
import { once } from 'node:events';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { gzipSync } from 'node:zlib';
import t, { type Test } from 'tap';
import type { EpgSourceApplied } from '../../src/config/spec-types.generated.ts';
import {
  SOURCE_IDLE_MS as DOWNLOAD_IDLE_MS,
  DOWNLOAD_MIN_LIMIT_S,
  downloadLimitMs,
} from '../../src/epg/xmltv-input.ts';
import { XmltvSource } from '../../src/epg/xmltv-source.ts';
import { silentLogger } from '../../src/log.ts';
import { epgTestBed, FIXTURE_DAY, sourceRecord } from '../helpers/epg-host.ts';

const XML =
  '<tv><programme start="20260310120000" stop="20260310130000" channel="c1"><title>Kept</title></programme></tv>';

async function listen(t: Test, server: Server): Promise<string> {
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  t.teardown(() => {
    server.closeAllConnections();
    server.close();
  });
  return `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
}

t.test('redirects, unreachable servers and stalls', async (t) => {
  const bed = epgTestBed(t);
  let markStalled = () => {};
  const stalled = new Promise<void>((ok) => {
    markStalled = ok;
  });
  let markDropped = () => {};
  const dropped = new Promise<void>((ok) => {
    markDropped = ok;
  });
  const server = createServer((req, res) => {
    if (req.url === '/moved') res.writeHead(302, { location: '/guide.xml' }).end();
    else if (req.url === '/loop') res.writeHead(302, { location: '/loop' }).end();
    else if (req.url === '/guide.xml') res.end(XML);
    else if (req.url === '/stall') {
      res.writeHead(200);
      res.write('<tv>', () => markStalled());
      res.once('close', () => markDropped());
    } else if (req.url === '/encoded') {
      res
        .writeHead(200, { 'content-encoding': 'gzip' })
        .end(gzipSync(XML.replace('Kept', 'Encoded')));
    } else res.writeHead(404).end();
  });
  const base = await listen(t, server);
  // a port that refuses: bound, then closed again
  const gone = createServer();
  const goneUrl = await listen(t, gone);
  gone.close();
  await once(gone, 'close');

  const spec = (source: string): EpgSourceApplied =>
    sourceRecord({ id: 1, name: 'web', source, enable: true });
  const src = new XmltvSource(bed.rt, spec(`${base}/moved`), silentLogger);
  t.teardown(() => src.close());
  await src.idle();
  t.equal(src.status().state, 'ready', `302 followed: ${src.status().message ?? ''}`);
  const day = () =>
    bed.rt
      .source(1)!
      .db.dayRows('c1', FIXTURE_DAY, FIXTURE_DAY + 86400)
      .map((r) => r.title);
  t.same(day(), ['Kept']);

  const cases: [string, RegExp][] = [
    [
      `${base}/loop`,
      /^download failed: more than 20 redirects from http:\/\/127\.0\.0\.1:\d+\/loop$/,
    ],
    [`${goneUrl}/guide.xml`, /^download failed: .*ECONNREFUSED/],
  ];
  for (const [url, re] of cases) {
    src.update(spec(url));
    await src.idle();
    t.equal(src.status().state, 'error', url);
    t.match(src.status().lastError, re, `${url}: ${src.status().lastError}`);
    t.same(day(), ['Kept'], `${url}: previous data kept`);
  }

  src.update(spec(`${base}/stall`));
  await stalled;
  // The first bytes are in: the reader now waits for more, under the idle limit.
  while ((src.status().progress?.bytes ?? 0) === 0 && src.status().state === 'importing')
    await new Promise((r) => setImmediate(r));
  bed.clock.advance(DOWNLOAD_IDLE_MS - 1000);
  t.equal(src.status().state, 'importing', 'still waiting before the idle limit');
  bed.clock.advance(1000);
  await src.idle();
  t.match(
    src.status().lastError,
    /^download failed: no data from http:\/\/127\.0\.0\.1:\d+\/stall for 60 s$/,
  );
  t.same(day(), ['Kept'], 'stall: previous data kept');
  await dropped;
  t.pass('the connection to the stalled server closed');

  src.update(spec(`${base}/encoded`));
  await src.idle();
  t.equal(src.status().state, 'ready', `Content-Encoding gzip: ${src.status().message ?? ''}`);
  t.same(day(), ['Encoded'], 'decoded as the server encoded it');
});

t.test('a trickling server is given up after the update interval (at least 10 min)', async (t) => {
  t.equal(downloadLimitMs(3600), 3_600_000, 'the update interval');
  t.equal(downloadLimitMs(60), DOWNLOAD_MIN_LIMIT_S * 1000, 'at least the floor');
  const bed = epgTestBed(t);
  let res: import('node:http').ServerResponse | undefined;
  const server = createServer((req, r) => {
    if (req.url === '/guide.xml') return void r.end(XML);
    r.writeHead(200);
    r.write('<tv>');
    r.once('close', () => markDropped());
    res = r;
  });
  let markDropped = () => {};
  const dropped = new Promise<void>((ok) => {
    markDropped = ok;
  });
  const base = await listen(t, server);
  const src = new XmltvSource(
    bed.rt,
    sourceRecord({ id: 1, name: 'web', source: `${base}/guide.xml`, enable: true }),
    silentLogger,
  );
  t.teardown(() => src.close());
  await src.idle();
  t.equal(src.status().state, 'ready');
  // 60 s below the floor: the floor applies.
  src.update(
    sourceRecord({
      id: 1,
      name: 'web',
      source: `${base}/trickle`,
      'update-interval': DOWNLOAD_MIN_LIMIT_S - 60,
      enable: true,
    }),
  );
  const bytes = () => src.status().progress?.bytes ?? 0;
  const grown = async (than: number) => {
    while (bytes() <= than && src.status().state === 'importing')
      await new Promise((r) => setImmediate(r));
  };
  await grown(0);
  const step = DOWNLOAD_IDLE_MS - 1000;
  let elapsed = 0;
  // One byte just before each idle deadline, until the download is given up (bounded).
  for (let i = 0; i < 20 && src.status().state === 'importing'; i++) {
    bed.clock.advance(step);
    elapsed += step;
    // Past the limit the abort lands on a later tick: stop feeding and wait for it below.
    if (elapsed >= DOWNLOAD_MIN_LIMIT_S * 1000) break;
    t.equal(src.status().state, 'importing', `still importing after ${elapsed / 1000} s`);
    const was = bytes();
    res!.write(' ');
    await grown(was);
  }
  await src.idle();
  t.ok(elapsed >= DOWNLOAD_MIN_LIMIT_S * 1000, `given up after ${elapsed / 1000} s`);
  t.match(
    src.status().lastError,
    /^download failed: answer from http:\/\/127\.0\.0\.1:\d+\/trickle not complete in 600 s$/,
  );
  await dropped;
  t.pass('the connection to the trickling server closed');
  t.same(
    bed.rt
      .source(1)!
      .db.dayRows('c1', FIXTURE_DAY, FIXTURE_DAY + 86400)
      .map((r) => r.title),
    ['Kept'],
    'previous data kept',
  );
});
