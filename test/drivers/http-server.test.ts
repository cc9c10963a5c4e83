// The http-server driver against real sockets: curl over HTTP and HTTPS on loopback, listener
// restarts on port and TLS changes, and a busy port reported as a retryable DriverError.
import { execFile } from 'node:child_process';
import { once } from 'node:events';
import { copyFileSync, mkdtempSync, renameSync, rmSync } from 'node:fs';
import type { IncomingMessage, ServerResponse } from 'node:http';
import net from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import tls from 'node:tls';
import { promisify } from 'node:util';
import t from 'tap';
import { ADMIN_HANDLER_SERVICE, httpServerDriver } from '../../src/drivers/http-server.ts';
import { silentLogger } from '../../src/log.ts';
import { DriverError, type Host } from '../../src/reconciler/driver.ts';
import { createHost } from '../../src/reconciler/host.ts';
import { ManualClock } from '../../src/util/clock.ts';
import { applied } from '../helpers/desired.ts';
import { waitFor } from '../helpers/stream-host.ts';
import { selfSigned } from '../helpers/tls.ts';

const run = promisify(execFile);
const LOOPBACK = '127.0.0.1';
const CURL_TIMEOUT_S = '5';

/** A port free right now on loopback (the schema forbids port 0, so pick one first). */
async function freePort(): Promise<number> {
  const srv = net.createServer();
  await new Promise<void>((r) => srv.listen(0, LOOPBACK, r));
  const port = (srv.address() as net.AddressInfo).port;
  await new Promise((r) => srv.close(r));
  return port;
}

async function curl(url: string, ...args: string[]): Promise<{ code: string; body: string }> {
  const { stdout } = await run('curl', [
    '-sS',
    '-k',
    '--max-time',
    CURL_TIMEOUT_S,
    '-w',
    '\n%{http_code}',
    ...args,
    url,
  ]);
  const i = stdout.lastIndexOf('\n');
  return { body: stdout.slice(0, i), code: stdout.slice(i + 1) };
}

function hostWithHandler(): Host {
  const host = createHost({ log: silentLogger, clock: new ManualClock(0), dataDir: '/x' });
  host.services.set(ADMIN_HANDLER_SERVICE, (req: IncomingMessage, res: ServerResponse) => {
    res.setHeader('content-type', 'text/plain');
    res.end(
      `hello ${req.url} via ${(req.socket as { encrypted?: boolean }).encrypted ? 'https' : 'http'}`,
    );
  });
  return host;
}

const spec = (s: Record<string, unknown>) =>
  applied('http-server', 'http-server', { 'bind-address': LOOPBACK, ...s });

t.test('serves the admin handler over HTTP and follows port changes', async (t) => {
  const host = hostWithHandler();
  const p1 = await freePort();
  const inst = await httpServerDriver.create(spec({ port: p1 }), host);
  t.teardown(() => inst.close());
  t.same(await curl(`http://${LOOPBACK}:${p1}/data/status`), {
    code: '200',
    body: 'hello /data/status via http',
  });
  t.match(inst.status(), { state: 'listening', http: `${LOOPBACK}:${p1}` });
  t.notOk(inst.status()['https'], 'no HTTPS without a certificate');

  const p2 = await freePort();
  await inst.update(spec({ port: p2 }), [
    { path: 'port', before: p1, after: p2, apply: 'restart' },
  ]);
  t.equal((await curl(`http://${LOOPBACK}:${p2}/x`)).code, '200');
  await t.rejects(curl(`http://${LOOPBACK}:${p1}/x`), 'the old port is closed');
  t.match(inst.status(), { http: `${LOOPBACK}:${p2}` });

  await inst.close();
  await inst.close();
  await t.rejects(curl(`http://${LOOPBACK}:${p2}/x`), 'closed');
});

t.test('answers 503 until the API handler is published', async (t) => {
  const host = createHost({ log: silentLogger, clock: new ManualClock(0), dataDir: '/x' });
  const port = await freePort();
  const inst = await httpServerDriver.create(spec({ port }), host);
  t.teardown(() => inst.close());
  const r = await curl(`http://${LOOPBACK}:${port}/`);
  t.equal(r.code, '503');
  t.same(JSON.parse(r.body), { status: 503, message: 'Service Unavailable' });
});

t.test('HTTPS listener when a certificate and key are set', async (t) => {
  const dir = mkdtempSync(join(tmpdir(), 'sluice-tls-'));
  t.teardown(() => rmSync(dir, { recursive: true, force: true }));
  const { cert, key } = await selfSigned(dir, 'localhost');
  const host = hostWithHandler();
  const [port, httpsPort] = [await freePort(), await freePort()];
  const inst = await httpServerDriver.create(
    spec({ port, 'https-port': httpsPort, certificate: cert, 'private-key': key }),
    host,
  );
  t.teardown(() => inst.close());
  t.same(await curl(`https://${LOOPBACK}:${httpsPort}/a`), {
    code: '200',
    body: 'hello /a via https',
  });
  t.equal((await curl(`http://${LOOPBACK}:${port}/a`)).body, 'hello /a via http');
  t.match(inst.status(), { https: `${LOOPBACK}:${httpsPort}` });

  // Removing the certificate stops HTTPS and leaves HTTP alone.
  await inst.update(spec({ port, 'https-port': httpsPort }), []);
  await t.rejects(curl(`https://${LOOPBACK}:${httpsPort}/a`));
  t.equal((await curl(`http://${LOOPBACK}:${port}/a`)).code, '200');
});

t.test('a busy port is a retryable DriverError; a missing certificate too', async (t) => {
  const blocker = net.createServer();
  await new Promise<void>((r) => blocker.listen(0, LOOPBACK, r));
  t.teardown(() => new Promise((r) => blocker.close(r)));
  const busy = (blocker.address() as net.AddressInfo).port;
  const host = hostWithHandler();
  const err = await httpServerDriver.create(spec({ port: busy }), host).catch((e) => e);
  t.ok(err instanceof DriverError);
  t.equal(err.retryable, true);
  t.match(err.message, `HTTP ${LOOPBACK}:${busy}: the port is in use`);

  const port = await freePort();
  const err2 = await httpServerDriver
    .create(
      spec({ port, certificate: '/nonexistent/c.pem', 'private-key': '/nonexistent/k.pem' }),
      host,
    )
    .catch((e) => e);
  t.ok(err2 instanceof DriverError && err2.retryable);
  t.match(err2.message, 'cannot read the certificate');
  const ok = await httpServerDriver.create(spec({ port }), host);
  await ok.close();
  t.pass('a failed create released its HTTP port');
});

t.test('a renewed certificate is served to new connections; open ones keep going', async (t) => {
  const dir = mkdtempSync(join(tmpdir(), 'sluice-tls-'));
  t.teardown(() => rmSync(dir, { recursive: true, force: true }));
  const first = await selfSigned(dir, 'first');
  const second = await selfSigned(dir, 'second');
  // The files the listener is configured with; renewals replace them by a rename.
  const cert = join(dir, 'live.crt');
  const key = join(dir, 'live.key');
  const put = (from: { cert: string; key: string }) => {
    for (const [src, dst] of [
      [from.key, key],
      [from.cert, cert],
    ] as const) {
      copyFileSync(src, `${dst}.new`);
      renameSync(`${dst}.new`, dst);
    }
  };
  put(first);
  const host = hostWithHandler();
  const [port, httpsPort] = [await freePort(), await freePort()];
  const inst = await httpServerDriver.create(
    spec({ port, 'https-port': httpsPort, certificate: cert, 'private-key': key }),
    host,
  );
  t.teardown(() => inst.close());
  const served = () => (inst.status()['https-certificate'] as { subject: string }).subject;
  t.equal(served(), 'CN=first');

  // One keep-alive TLS connection, opened before the renewal.
  const open = tls.connect({ host: LOOPBACK, port: httpsPort, rejectUnauthorized: false });
  t.teardown(() => open.destroy());
  await once(open, 'secureConnect');
  t.match(open.getPeerCertificate().subject, { CN: 'first' });
  const ask = async (sock: tls.TLSSocket, path: string) => {
    sock.write(`GET ${path} HTTP/1.1\r\nHost: x\r\n\r\n`);
    let text = '';
    while (!text.includes(`hello ${path}`)) text += (await once(sock, 'data'))[0].toString();
    return text;
  };
  t.match(await ask(open, '/before'), /200 OK/);

  put(second);
  await waitFor(() => served() === 'CN=second', 5000, 'the renewal picked up');
  const fresh = tls.connect({ host: LOOPBACK, port: httpsPort, rejectUnauthorized: false });
  t.teardown(() => fresh.destroy());
  await once(fresh, 'secureConnect');
  t.match(
    fresh.getPeerCertificate().subject,
    { CN: 'second' },
    'a new connection gets the new one',
  );
  t.match(await ask(open, '/after'), /200 OK/, 'the connection opened before still works');
  t.match(inst.status()['https-certificate'], { reloadedAt: /Z$/ });

  // A certificate without its key keeps the served pair and says why.
  copyFileSync(first.cert, `${cert}.new`);
  renameSync(`${cert}.new`, cert);
  await waitFor(
    () => !!(inst.status()['https-certificate'] as { lastError?: string }).lastError,
    5000,
    'the mismatch reported',
  );
  t.equal(served(), 'CN=second', 'the mismatched pair is not put in service');
});
