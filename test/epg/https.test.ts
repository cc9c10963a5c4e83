// HTTPS on the EPG server through the epg-server driver: self-signed certificates made with
// `openssl req`, /xmltv over https with curl -k (anonymous and Digest), and a certificate path
// change that restarts the HTTPS listener only (an idle connection to HTTP survives it).
import { execFile } from 'node:child_process';
import { once } from 'node:events';
import { copyFileSync, readFileSync, renameSync, writeFileSync } from 'node:fs';
import net from 'node:net';
import { join } from 'node:path';
import tls from 'node:tls';
import { promisify } from 'node:util';
import t from 'tap';
import { createEpgHttpServer } from '../../src/api/epg-server.ts';
import { epgServerDriver } from '../../src/drivers/epg-server.ts';
import { EPG_HTTP_SERVICE } from '../../src/epg/xmltv-cache.ts';
import { XmltvSource } from '../../src/epg/xmltv-source.ts';
import { silentLogger } from '../../src/log.ts';
import type { FieldChange } from '../../src/reconciler/types.ts';
import { applied } from '../helpers/desired.ts';
import { curl } from '../helpers/epg-curl.ts';
import { epgTestBed, FIXTURE_DAY, fixture, sourceRecord } from '../helpers/epg-host.ts';
import { freePort } from '../helpers/server.ts';
import { waitFor } from '../helpers/stream-host.ts';
import { selfSigned } from '../helpers/tls.ts';

const _run = promisify(execFile);
const SOCKET_TIMEOUT_MS = 5000;

/** A field change as the reconciler hands it to update() (the driver compares settings). */
function change(path: string, apply: FieldChange['apply']): FieldChange {
  return { path, before: undefined, after: undefined, apply };
}

/** Common name of the certificate the TLS listener presents. */
async function servedCn(port: number): Promise<string> {
  const sock = tls.connect({ host: '127.0.0.1', port, rejectUnauthorized: false });
  sock.setTimeout(SOCKET_TIMEOUT_MS, () => sock.destroy(new Error('TLS handshake timed out')));
  await once(sock, 'secureConnect');
  const cn = sock.getPeerCertificate().subject.CN;
  sock.destroy();
  return Array.isArray(cn) ? cn.join(',') : (cn ?? '');
}

/** An idle TCP connection; `closed` turns true when the server drops it. */
async function idleConnection(port: number): Promise<{ closed: () => boolean; end: () => void }> {
  const sock = net.connect({ host: '127.0.0.1', port });
  await once(sock, 'connect');
  let closed = false;
  sock.on('close', () => {
    closed = true;
  });
  sock.on('error', () => undefined);
  return { closed: () => closed, end: () => sock.destroy() };
}

t.test('EPG server over HTTPS; a certificate change restarts only HTTPS', async (t) => {
  const bed = epgTestBed(t, FIXTURE_DAY + 1800);
  bed.host.services.set(EPG_HTTP_SERVICE, createEpgHttpServer);
  const { rt, dir } = bed;
  const guide = join(dir, 'guide.xml');
  writeFileSync(guide, readFileSync(fixture('guide.xml')));
  const src = new XmltvSource(
    rt,
    sourceRecord({ id: 1, name: 'f', source: guide, enable: true }),
    silentLogger,
  );
  await src.idle();
  t.teardown(() => src.close());
  rt.channelSets.set(1, { id: 1, name: 'basic' });
  rt.setBinding('s1', {
    stream: 's1',
    source: 1,
    channel: 'one.example',
    channelSets: [1],
    mpts: false,
  });
  rt.logins.set(1, {
    id: 1,
    login: 'box',
    password: 'box-pass',
    channelSet: 1,
    pause: false,
    limitDay: 0,
    limitIp: '',
  });

  const one = await selfSigned(dir, 'one');
  const two = await selfSigned(dir, 'two');
  const httpPort = await freePort();
  const httpsPort = await freePort();
  const spec = (c: { cert: string; key: string }, name = 'sluice') => ({
    port: httpPort,
    'https-port': httpsPort,
    'bind-address': '127.0.0.1',
    certificate: c.cert,
    'private-key': c.key,
    'source-info-name': name,
  });
  const res = (s: Record<string, unknown>) => applied('epg-server', 'epg-server', s);
  const inst = await epgServerDriver.create(res(spec(one)), bed.host);
  t.teardown(() => inst.close());
  t.match(inst.status(), { state: 'listening', http: httpPort, https: httpsPort });

  const https = `https://127.0.0.1:${httpsPort}`;
  const anon = await curl(['-k', '--compressed', `${https}/xmltv`]);
  t.equal(anon.status, 200, 'anonymous loopback over https');
  t.match(anon.headers['content-type'], /^text\/xml/);
  t.equal(anon.headers['content-encoding'], 'gzip', 'gzip negotiated over https');
  t.match(anon.body.toString(), /<channel id="three\.example">/, 'anonymous sees every channel');
  const digest = await curl([
    '-k',
    '--interface',
    '127.0.0.2',
    '--digest',
    '-u',
    'box:box-pass',
    `${https}/xmltv`,
  ]);
  t.equal(digest.status, 200, 'digest over https from 127.0.0.2');
  t.match(digest.body.toString(), /<channel id="one\.example">/);
  t.notMatch(digest.body.toString(), /two\.example/, 'limited to the channel set');
  const noAuth = await curl(['-k', '--interface', '127.0.0.2', `${https}/xmltv`]);
  t.equal(noAuth.status, 401, 'no credentials from elsewhere over https');
  const verified = await curl(['--cacert', one.cert, `${https}/xmltv.gz`]);
  t.equal(verified.status, 200, 'the certificate verifies against itself (curl without -k)');
  t.equal(await servedCn(httpsPort), 'one');

  // Only the header attribute changes: neither listener restarts.
  const httpIdle = await idleConnection(httpPort);
  const httpsIdle = await idleConnection(httpsPort);
  t.teardown(() => {
    httpIdle.end();
    httpsIdle.end();
  });
  await inst.update(res(spec(one, 'renamed')), [change('source-info-name', 'hot')]);
  const renamed = await curl(['-k', `${https}/xmltv`]);
  t.match(renamed.body.toString(), /source-info-name="renamed"/, 'hot field applied');
  t.notOk(httpIdle.closed(), 'HTTP not restarted by a hot field');
  t.notOk(httpsIdle.closed(), 'HTTPS not restarted by a hot field');

  // The files at the same paths are renewed: the new certificate is served to new
  // connections without a restart (the idle HTTPS client stays).
  const three = await selfSigned(dir, 'three');
  for (const [from, to] of [
    [three.key, one.key],
    [three.cert, one.cert],
  ] as const) {
    copyFileSync(from, `${to}.new`);
    renameSync(`${to}.new`, to);
  }
  await waitFor(async () => (await servedCn(httpsPort)) === 'three', 5000, 'the renewal served');
  t.notOk(httpsIdle.closed(), 'HTTPS not restarted by a renewal');
  t.match(inst.status(), { 'https-certificate': { subject: 'CN=three', reloadedAt: /Z$/ } });

  // A new certificate path: HTTPS restarts with it, HTTP keeps its idle client.
  await inst.update(res(spec(two, 'renamed')), [
    change('certificate', 'restart'),
    change('private-key', 'restart'),
  ]);
  t.equal(await servedCn(httpsPort), 'two', 'the new certificate is served');
  t.ok(httpsIdle.closed(), 'the HTTPS listener was restarted (its idle client dropped)');
  t.notOk(httpIdle.closed(), 'the HTTP listener was not restarted');
  const plain = await curl([`http://127.0.0.1:${httpPort}/xmltv`]);
  t.equal(plain.status, 200, 'HTTP still answers');
  const again = await curl(['-k', `${https}/xmltv`]);
  t.equal(again.status, 200, 'HTTPS answers with the new certificate');

  // Removing the certificate stops HTTPS; HTTP stays.
  await inst.update(res({ ...spec(two, 'renamed'), certificate: '', 'private-key': '' }), [
    change('certificate', 'restart'),
  ]);
  t.same(inst.status(), { state: 'listening', http: httpPort }, 'no HTTPS without a certificate');
  t.notOk(httpIdle.closed(), 'HTTP still not restarted');
  const refused = await curl(['-k', `${https}/xmltv`]).catch((err: Error) => err);
  t.ok(refused instanceof Error, 'HTTPS port closed');
});
