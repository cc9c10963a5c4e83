// The EPG server on loopback with real clients: curl (Digest, l/p, 127.0.0.2 as a second local
// address), gzip negotiation, headers, error bodies; the XMLTV passes tv_validate_file.
import { execFile } from 'node:child_process';
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { gunzipSync } from 'node:zlib';
import t, { type Test } from 'tap';
import { EpgServer } from '../../src/api/epg-server.ts';
import { serverSettings } from '../../src/epg/xmltv-cache.ts';
import { XmltvSource } from '../../src/epg/xmltv-source.ts';
import { silentLogger } from '../../src/log.ts';
import { applied } from '../helpers/desired.ts';
import { type CurlResult, curl } from '../helpers/epg-curl.ts';
import { epgTestBed, FIXTURE_DAY, fixture, sourceRecord } from '../helpers/epg-host.ts';

const run = promisify(execFile);
const DTD = '/usr/share/xmltv/xmltv.dtd';

t.test('EPG server', async (t) => {
  // Now = 00:30 UTC: "Late Night" (ended 00:00) is past, "Midnight News" is on air.
  const bed = epgTestBed(t, FIXTURE_DAY + 1800);
  const { rt } = bed;
  const path = join(bed.dir, 'guide.xml');
  writeFileSync(path, readFileSync(fixture('guide.xml')));
  const src = new XmltvSource(
    rt,
    sourceRecord({ id: 1, name: 'f', source: path, enable: true }),
    silentLogger,
  );
  await src.idle();
  t.teardown(() => src.close());
  // channel set 1 = one.example and two.example; set 2 exists but has no channels
  rt.channelSets.set(1, { id: 1, name: 'basic' });
  rt.channelSets.set(2, { id: 2, name: 'empty' });
  rt.setBinding('s1', {
    stream: 's1',
    source: 1,
    channel: 'one.example',
    channelSets: [1],
    mpts: false,
  });
  rt.setBinding('s2', {
    stream: 's2',
    source: 1,
    channel: 'two.example',
    channelSets: [1],
    mpts: false,
  });
  const now = rt.nowSec();
  const login = (
    id: number,
    name: string,
    extra: Partial<Parameters<typeof rt.logins.set>[1]> = {},
  ) =>
    rt.logins.set(id, {
      id,
      login: name,
      password: `pw-${name}`,
      channelSet: 1,
      pause: false,
      limitDay: 0,
      limitIp: '',
      ...extra,
    });
  login(1, 'alice');
  login(2, 'paused', { pause: true });
  login(3, 'expired', { limitDay: now - 1 });
  login(4, 'pinned', { limitIp: '127.0.0.1' });
  login(5, 'noset', { channelSet: 0 });
  login(6, 'emptyset', { channelSet: 2 });
  login(7, 'future', { limitDay: now + 3600 });

  const server = new EpgServer(rt, {
    ...serverSettings(applied('epg-server', 'epg-server', {}).spec),
    port: 0,
    bindAddress: '127.0.0.1',
    sourceInfoName: 'Test & Co',
    sourceInfoUrl: 'http://epg.example/',
  });
  const ports = await server.listen();
  t.teardown(() => server.close());
  const base = `http://127.0.0.1:${ports.http}`;
  // Requests "from elsewhere": bound to 127.0.0.2, which is not the anonymous address.
  const away = ['--interface', '127.0.0.2'];

  const always = (t: Test, r: CurlResult, what: string) => {
    t.equal(
      r.headers['cache-control'],
      'no-cache, no-store, must-revalidate',
      `${what}: cache-control`,
    );
    t.equal(r.headers['pragma'], 'no-cache', `${what}: pragma`);
    t.equal(r.headers['expires'], '0', `${what}: expires`);
    t.equal(r.headers['connection'], 'close', `${what}: connection`);
  };
  const errorBody = (t: Test, r: CurlResult, status: number, what: string) => {
    t.equal(r.status, status, what);
    t.match(r.headers['content-type'], /^application\/json/, `${what}: JSON`);
    const b = JSON.parse(r.body.toString());
    t.equal(b.status, status, `${what}: body status`);
    t.type(b.message, 'string');
    always(t, r, what);
    return b;
  };

  await t.test('loopback anonymous: plain XML that passes tv_validate_file', async (t) => {
    const r = await curl([`${base}/xmltv`]);
    t.equal(r.status, 200);
    t.match(r.headers['content-type'], /^text\/xml/);
    t.notOk(r.headers['content-encoding']);
    always(t, r, 'anonymous');
    const xml = r.body.toString();
    t.match(xml, /<tv source-info-name="Test &amp; Co" source-info-url="http:\/\/epg.example\/"/);
    for (const id of ['one.example', 'two.example', 'three.example'])
      t.match(xml, `<channel id="${id}">`);
    t.match(
      xml,
      '<display-name lang="">Two (unmapped language)</display-name>',
      'empty lang when unmapped',
    );
    t.match(xml, '<title lang="">Unmapped language title</title>');
    t.match(xml, '<icon src="http://logos.example/one.png"/>');
    t.match(
      xml,
      /<programme start="20260310010000 \+0100" stop="20260310020000 \+0100" channel="one.example">/,
    );
    t.match(
      xml,
      /<title lang="en">Midnight News<\/title>\s*<title lang="de">Mitternachtsnachrichten<\/title>/,
    );
    t.match(xml, /<rating system="FSK">\s*<value>12<\/value>\s*<\/rating>/);
    t.match(xml, /start="20260310080000 -0500"/, 'zone of the channel');
    t.notMatch(xml, 'Late Night', 'ended before now: not output');
    const file = join(bed.dir, 'out.xml');
    writeFileSync(file, r.body);
    const v = await run('tv_validate_file', ['--dtd-file', DTD, file]).then(
      (x) => ({ code: 0, out: x.stdout + x.stderr }),
      (e) => ({ code: e.code, out: String(e.stdout) + String(e.stderr) }),
    );
    t.equal(v.code, 0, `tv_validate_file: ${v.out}`);
  });

  await t.test('gzip negotiation and /xmltv.gz', async (t) => {
    const z = await curl(['-H', 'Accept-Encoding: gzip', `${base}/xmltv`]);
    t.equal(z.headers['content-encoding'], 'gzip');
    t.match(z.headers['content-type'], /^text\/xml/);
    t.match(gunzipSync(z.body).toString(), /<tv /);
    const compressed = await curl(['--compressed', `${base}/xmltv`]);
    t.match(compressed.body.toString(), /<tv /, 'curl --compressed decodes it');
    const gz = await curl([`${base}/xmltv.gz`]);
    t.equal(gz.status, 200);
    t.equal(gz.headers['content-type'], 'application/octet-stream');
    t.equal(gz.headers['content-disposition'], 'inline; filename=xmltv.xml.gz');
    t.notOk(gz.headers['content-encoding']);
    t.match(gunzipSync(gz.body).toString(), /<tv /);
    always(t, gz, 'xmltv.gz');
  });

  await t.test('Digest and l/p give the account its channel set', async (t) => {
    const d = await curl([...away, '--digest', '-u', 'alice:pw-alice', `${base}/xmltv`]);
    t.equal(d.status, 200, 'digest');
    const xml = d.body.toString();
    t.match(xml, '<channel id="one.example">');
    t.match(xml, '<channel id="two.example">');
    t.notMatch(xml, 'three.example', 'not in the set');
    const lp = await curl([...away, `${base}/xmltv?l=alice&p=pw-alice`]);
    t.equal(lp.status, 200, 'l/p');
    t.equal(lp.body.toString(), xml);
    const long = await curl([...away, `${base}/xmltv.gz?login=alice&password=pw-alice`]);
    t.equal(long.status, 200, 'login/password');
    const fut = await curl([...away, `${base}/xmltv?l=future&p=pw-future`]);
    t.equal(fut.status, 200, 'limit-day in the future');
    const pinned = await curl([`${base}/xmltv?l=pinned&p=pw-pinned`]);
    t.equal(pinned.status, 200, 'limit-ip matches');
    // Loopback with l/p is that account. (A Digest client sends no credentials until it is
    // challenged, and loopback without credentials is never challenged: it is anonymous.)
    const loopCreds = await curl([`${base}/xmltv?l=alice&p=pw-alice`]);
    t.notMatch(
      loopCreds.body.toString(),
      'three.example',
      'loopback with credentials is that account',
    );
  });

  await t.test('401: no credentials, wrong password, unknown login', async (t) => {
    for (const [what, args] of [
      ['none', [`${base}/xmltv`]],
      ['wrong digest password', ['--digest', '-u', 'alice:nope', `${base}/xmltv`]],
      ['wrong l/p password', [`${base}/xmltv?l=alice&p=nope`]],
      ['unknown login', [`${base}/xmltv?l=mallory&p=x`]],
    ] as [string, string[]][]) {
      const r = await curl([...away, ...args]);
      errorBody(t, r, 401, what);
      t.match(r.headers['www-authenticate'], /Digest realm="sluice-epg"/, `${what}: challenge`);
    }
  });

  await t.test('403: paused, expired, wrong IP', async (t) => {
    const p = errorBody(
      t,
      await curl([...away, `${base}/xmltv?l=paused&p=pw-paused`]),
      403,
      'paused',
    );
    t.match(p.message, /paused/);
    const e = errorBody(
      t,
      await curl([...away, '--digest', '-u', 'expired:pw-expired', `${base}/xmltv`]),
      403,
      'expired',
    );
    t.match(e.message, /expired/);
    const ip = errorBody(
      t,
      await curl([...away, `${base}/xmltv?l=pinned&p=pw-pinned`]),
      403,
      'limit-ip',
    );
    t.match(ip.message, /address/);
  });

  await t.test('no channel set, or an empty one: an empty tv element', async (t) => {
    for (const who of ['noset', 'emptyset']) {
      const r = await curl([...away, `${base}/xmltv?l=${who}&p=pw-${who}`]);
      t.equal(r.status, 200, who);
      const xml = r.body.toString();
      t.notMatch(xml, '<channel', who);
      t.match(xml, /<tv [^>]*>\s*<\/tv>/, who);
    }
  });

  await t.test('404 other paths, 405 other methods', async (t) => {
    errorBody(t, await curl([`${base}/`]), 404, 'root');
    errorBody(t, await curl([`${base}/xmltv/extra`]), 404, 'subpath');
    errorBody(t, await curl(['-X', 'POST', '-d', 'x=1', `${base}/nothing`]), 404, 'POST elsewhere');
    const post = errorBody(
      t,
      await curl(['-X', 'POST', '-d', 'x=1', `${base}/xmltv`]),
      405,
      'POST',
    );
    t.equal(post.status, 405);
    errorBody(t, await curl(['-X', 'DELETE', `${base}/xmltv.gz`]), 405, 'DELETE');
  });

  await t.test('cache: rebuilt after the update counter moves, flushed by reset', async (t) => {
    const a = await curl([`${base}/xmltv`]);
    rt.source(1)!.db.addEvent('one.example', FIXTURE_DAY + 20 * 3600, FIXTURE_DAY + 21 * 3600, [
      { lang: 1, title: 'Added Later', desc: '' },
    ]);
    const b = await curl([`${base}/xmltv`]);
    t.equal(b.body.toString(), a.body.toString(), 'cached until an update');
    rt.sourceChanged(1);
    const c = await curl([`${base}/xmltv`]);
    t.match(c.body.toString(), 'Added Later', 'rebuilt after the counter moved');
  });
});
