// XMLTV import: a real file (plain, gzip, over HTTP with Basic auth and cookies) imports; bad
// input keeps the previous data and puts the error in the source status.
import { readFileSync, writeFileSync } from 'node:fs';
import { createServer, type IncomingMessage } from 'node:http';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';
import { gzipSync } from 'node:zlib';
import t, { type Test } from 'tap';
import type { EpgSourceApplied } from '../../src/config/spec-types.generated.ts';
import { XmltvSource } from '../../src/epg/xmltv-source.ts';
import { silentLogger } from '../../src/log.ts';
import { epgTestBed, FIXTURE_DAY, fixture, sourceRecord } from '../helpers/epg-host.ts';

const GUIDE = readFileSync(fixture('guide.xml'));

function spec(over: Partial<EpgSourceApplied>): EpgSourceApplied {
  return { ...sourceRecord({ id: 1, name: 'fixture', source: '', enable: true }), ...over };
}

async function importOnce(bed: ReturnType<typeof epgTestBed>, over: Partial<EpgSourceApplied>) {
  const src = new XmltvSource(bed.rt, spec(over), silentLogger);
  await src.idle();
  return src;
}

t.test('imports the fixture file: channels, names, zones, languages, ratings', async (t) => {
  const bed = epgTestBed(t);
  const path = join(bed.dir, 'guide.xml');
  writeFileSync(path, GUIDE);
  const src = await importOnce(bed, { source: path });
  t.teardown(() => src.close());
  const st = src.status();
  t.equal(st.state, 'ready', st.message ?? '');
  t.equal(st.updates, 1);
  t.equal(st.channels, 3);
  const db = bed.rt.source(1)!.db;
  t.same(
    db.channels().map((c) => [c.channel_id, c.time_zone]),
    [
      ['one.example', 3600],
      ['three.example', 0],
      ['two.example', -18000],
    ],
  );
  t.equal(db.channel('one.example')!.icon, 'http://logos.example/one.png');
  t.same(
    db.channelNames('one.example').map((n) => n.name),
    ['One', 'Eins'],
  );
  const rows = db.dayRows('one.example', FIXTURE_DAY, FIXTURE_DAY + 86400);
  const midnight = rows.filter((r) => r.start_time === FIXTURE_DAY);
  t.same(midnight.map((r) => r.title).sort(), ['Midnight News', 'Mitternachtsnachrichten']);
  t.ok(
    midnight.some((r) => r.desc === 'News at 00:00 UTC & more.'),
    'entity decoded',
  );
  const fr = rows.find((r) => r.title === 'Seulement en français')!;
  t.equal(fr.desc, 'Une <description> brute.', 'CDATA kept');
  const ratings = db.ratings('one.example', 0);
  t.same([...ratings.values()].flat(), [{ system: 'FSK', value: '12' }]);
  // programme without stop ends at the next start of its channel
  const two = db.dayRows('two.example', FIXTURE_DAY, FIXTURE_DAY + 86400);
  const open = two.find((r) => r.title.startsWith('No stop'))!;
  t.equal(open.stop_time - open.start_time, 3600);
});

t.test('gzip: detected by magic bytes, and forced by content-encoding 1', async (t) => {
  const bed = epgTestBed(t);
  const path = join(bed.dir, 'guide.xml.gz');
  writeFileSync(path, gzipSync(GUIDE));
  const a = await importOnce(bed, { source: path });
  t.equal(a.status().state, 'ready', a.status().message ?? '');
  await a.close();
  const b = await importOnce(bed, { source: path, 'content-encoding': 1 });
  t.equal(b.status().state, 'ready', b.status().message ?? '');
  await b.close();
  // forcing gzip on a plain file is an error
  const plain = join(bed.dir, 'plain.xml');
  writeFileSync(plain, GUIDE);
  const c = await importOnce(bed, { source: plain, 'content-encoding': 1 });
  t.equal(c.status().state, 'error');
  await c.close();
});

function serve(t: Test, handler: (req: IncomingMessage) => { status: number; body: Buffer }) {
  const seen: IncomingMessage[] = [];
  const server = createServer((req, res) => {
    seen.push(req);
    const r = handler(req);
    res.writeHead(r.status, { 'content-type': 'application/xml' });
    res.end(r.body);
  });
  t.teardown(() => new Promise<void>((ok) => server.close(() => ok())));
  return new Promise<{ url: string; seen: IncomingMessage[] }>((ok) =>
    server.listen(0, '127.0.0.1', () =>
      ok({ url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`, seen }),
    ),
  );
}

t.test('HTTP download with Basic auth, cookies and save-file', async (t) => {
  const bed = epgTestBed(t);
  const { url, seen } = await serve(t, (req) =>
    req.url === '/guide.xml.gz'
      ? { status: 200, body: gzipSync(GUIDE) }
      : { status: 404, body: Buffer.from('not here') },
  );
  const src = await importOnce(bed, {
    source: `${url}/guide.xml.gz`,
    login: 'epg',
    password: 's3cret',
    cookies: 'session=abc',
    'save-file': true,
  });
  t.teardown(() => src.close());
  t.equal(src.status().state, 'ready', src.status().message ?? '');
  t.equal(seen[0]!.headers.authorization, `Basic ${Buffer.from('epg:s3cret').toString('base64')}`);
  t.equal(seen[0]!.headers.cookie, 'session=abc');
  const saved = readFileSync(join(bed.rt.dir, 'src-1.xmltv.download'));
  t.same(saved.subarray(0, 2), Buffer.from([0x1f, 0x8b]), 'raw download kept');
});

t.test('bad input keeps the previous EPG and reports the error', async (t) => {
  const bed = epgTestBed(t);
  const bodies: Record<string, Buffer> = {
    '/good.xml': GUIDE,
    '/malformed.xml': Buffer.from('<tv><channel id="x"><display-name>X</channel></tv>'),
    '/xxe.xml': Buffer.from(
      '<?xml version="1.0"?>\n<!DOCTYPE tv [<!ENTITY xxe SYSTEM "file:///etc/passwd">]>\n' +
        '<tv><programme start="20260310000000" stop="20260310010000" channel="x"><title>&xxe;</title></programme></tv>',
    ),
    '/bomb.xml': Buffer.from(
      '<?xml version="1.0"?>\n<!DOCTYPE tv [<!ENTITY a "aaaaaaaaaa"><!ENTITY b "&a;&a;&a;&a;&a;&a;&a;&a;&a;&a;">' +
        '<!ENTITY c "&b;&b;&b;&b;&b;&b;&b;&b;&b;&b;">]>\n<tv><channel id="x"><display-name>&c;</display-name></channel></tv>',
    ),
    '/undeclared.xml': Buffer.from(
      '<tv><channel id="x"><display-name>&nope;</display-name></channel></tv>',
    ),
    '/truncated.xml.gz': gzipSync(GUIDE).subarray(0, 400),
    '/not-xmltv.xml': Buffer.from('<html><body>login page</body></html>'),
  };
  const { url } = await serve(t, (req) => {
    const body = bodies[req.url ?? ''];
    return body ? { status: 200, body } : { status: 404, body: Buffer.from('gone') };
  });
  const src = new XmltvSource(bed.rt, spec({ source: `${url}/good.xml` }), silentLogger);
  t.teardown(() => src.close());
  await src.idle();
  t.equal(src.status().state, 'ready');
  const before = bed.rt.source(1)!.db.counts();
  t.ok(before.events > 5);
  const cases: [string, RegExp][] = [
    ['/malformed.xml', /parse error/],
    ['/xxe.xml', /DOCTYPE/],
    ['/bomb.xml', /DOCTYPE/],
    ['/undeclared.xml', /entity/i],
    ['/truncated.xml.gz', /end of file|unexpected/i],
    ['/not-xmltv.xml', /not <tv>/],
    ['/missing.xml', /HTTP 404/],
  ];
  for (const [path, re] of cases) {
    src.update(spec({ source: url + path }));
    await src.idle();
    const st = src.status();
    t.equal(st.state, 'error', path);
    t.match(st.lastError, re, `${path}: ${st.lastError}`);
    t.same(bed.rt.source(1)!.db.counts(), before, `${path}: previous data kept`);
    t.equal(st.updates, 1, `${path}: no update counted`);
  }
});

t.test(
  'progress is visible while importing; scheduled refresh follows update-interval',
  async (t) => {
    const bed = epgTestBed(t);
    const path = join(bed.dir, 'guide.xml');
    writeFileSync(path, GUIDE);
    const src = new XmltvSource(
      bed.rt,
      spec({ source: path, 'update-interval': 600 }),
      silentLogger,
    );
    t.teardown(() => src.close());
    const during = src.status();
    t.equal(during.state, 'importing');
    t.ok(during.progress, 'progress object present while running');
    await src.idle();
    t.equal(src.status().updates, 1);
    const counter = bed.rt.counter;
    bed.clock.advance(599_000);
    t.equal(src.status().updates, 1, 'not yet');
    bed.clock.advance(1_000);
    await src.idle();
    t.equal(src.status().updates, 2, 'refreshed after update-interval');
    t.ok(bed.rt.counter > counter, 'XMLTV counter bumped');
  },
);
