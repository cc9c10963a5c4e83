// Authentication over real sockets: the app's routing behind node:http on 127.0.0.1, reached
// from 127.0.0.1 (anonymous) and from 127.0.0.2 (must sign in), with curl --digest and with a
// hand-made Digest client for nonce-count replay and stale nonces.
import { execFile } from 'node:child_process';
import { createServer, request } from 'node:http';
import type { AddressInfo } from 'node:net';
import t, { type Test } from 'tap';
import { buildApp } from '../../../src/api/app.ts';
import type { DigestAlgorithm } from '../../../src/api/auth/digest.ts';
import { digestResponse, parseDigestHeader } from '../../../src/api/auth/digest.ts';
import type { AppContext } from '../../../src/api/context.ts';
import { fakeContext } from '../../helpers/api-context.ts';

const OTHER_LOCAL = '127.0.0.2';
const TIMEOUT_MS = 10_000;

async function serve(t: Test, over: Partial<AppContext> = {}) {
  const ctx = fakeContext(over);
  const app = await buildApp(ctx);
  await app.ready();
  const server = createServer((req, res) => app.routing(req, res));
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  t.teardown(async () => {
    server.closeAllConnections();
    await new Promise((r) => server.close(r));
    await app.close();
  });
  const base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  return { ctx, base };
}

interface Answer {
  status: number;
  /** Every header as a list, so repeated ones (WWW-Authenticate) stay apart. */
  headers: Record<string, string[] | undefined>;
  body: string;
}

function get(
  url: string,
  o: { from?: string; method?: string; headers?: Record<string, string>; body?: string } = {},
): Promise<Answer> {
  return new Promise((resolve, reject) => {
    const req = request(
      url,
      {
        method: o.method ?? 'GET',
        headers: o.headers,
        localAddress: o.from ?? '127.0.0.1',
        timeout: TIMEOUT_MS,
        agent: false,
      },
      (res) => {
        let body = '';
        res.setEncoding('utf8');
        res.on('data', (c) => {
          body += c;
        });
        res.on('end', () =>
          resolve({ status: res.statusCode ?? 0, headers: res.headersDistinct, body }),
        );
      },
    );
    req.on('timeout', () => req.destroy(new Error('request timed out')));
    req.on('error', reject);
    req.end(o.body);
  });
}

function curl(args: string[]): Promise<{ code: number; body: string }> {
  return new Promise((resolve, reject) => {
    execFile(
      'curl',
      ['-sS', '--max-time', '10', '--interface', OTHER_LOCAL, '-w', '\n%{http_code}', ...args],
      { timeout: TIMEOUT_MS },
      (err, stdout) => {
        if (err && !stdout) return reject(err);
        const cut = stdout.lastIndexOf('\n');
        resolve({ code: Number(stdout.slice(cut + 1)), body: stdout.slice(0, cut) });
      },
    );
  });
}

/** Sign a request with the challenge of a 401 answer. */
function sign(
  challengeHeader: string,
  o: { method: string; uri: string; login: string; password: string; nc: string },
): string {
  const ch = parseDigestHeader(challengeHeader)!;
  const algorithm = ch['algorithm'] as DigestAlgorithm;
  const response = digestResponse({
    algorithm,
    login: o.login,
    realm: ch['realm']!,
    password: o.password,
    method: o.method,
    uri: o.uri,
    nonce: ch['nonce']!,
    nc: o.nc,
    cnonce: 'c0ffee',
  });
  return (
    `Digest username="${o.login}", realm="${ch['realm']}", nonce="${ch['nonce']}", ` +
    `uri="${o.uri}", algorithm=${algorithm}, qop=auth, nc=${o.nc}, cnonce="c0ffee", ` +
    `response="${response}", opaque="${ch['opaque']}"`
  );
}

function challenges(a: Answer): string[] {
  return a.headers['www-authenticate'] ?? [];
}

t.test(
  'loopback 127.0.0.1 is anonymous admin; 127.0.0.2 is not, whatever it forwards',
  async (t) => {
    const { base } = await serve(t);
    const local = await get(`${base}/config`);
    t.equal(local.status, 200, '127.0.0.1 without credentials');

    const other = await get(`${base}/config`, { from: OTHER_LOCAL });
    t.equal(other.status, 401);
    t.same(JSON.parse(other.body), { status: 401, message: 'Authentication required' });
    t.match(other.headers['content-type']?.[0], /application\/json/);
    const chs = challenges(other);
    t.equal(chs.length, 2, 'two challenges');
    t.match(chs[0], /algorithm=SHA-256/, 'SHA-256 offered first');
    t.match(chs[1], /algorithm=MD5/);

    for (const h of [
      { 'x-forwarded-for': '127.0.0.1' },
      { 'x-real-ip': '127.0.0.1' },
      { forwarded: 'for=127.0.0.1' },
    ] as Record<string, string>[]) {
      const spoof = await get(`${base}/config`, { from: OTHER_LOCAL, headers: h });
      t.equal(spoof.status, 401, `not anonymous with ${Object.keys(h)[0]}`);
    }

    const wrongLocal = await get(`${base}/config`, {
      headers: { authorization: 'Digest username="admin", realm="sluice", nonce="x"' },
    });
    t.equal(wrongLocal.status, 401, 'credentials sent from 127.0.0.1 are checked');
  },
);

t.test('a page of another site rebound to 127.0.0.1 is not anonymous admin', async (t) => {
  const { base } = await serve(t);
  const port = new URL(base).port;
  for (const host of ['localhost', `localhost:${port}`, `127.0.0.1:${port}`, '[::1]'])
    t.equal((await get(`${base}/config`, { headers: { host } })).status, 200, `Host ${host}`);
  for (const host of [`evil.example:${port}`, `127.0.0.1.rebind.example:${port}`, 'intranet']) {
    const rebound = await get(`${base}/config`, { headers: { host } });
    t.equal(rebound.status, 401, `Host ${host}: sign in like any remote client`);
    const write = await get(`${base}/config`, {
      method: 'PATCH',
      headers: { host, 'content-type': 'application/merge-patch+json' },
      body: '{}',
    });
    t.equal(write.status, 401, `PATCH with Host ${host}`);
  }
});

t.test('curl --digest: admin in, wrong password out, viewer reads but cannot write', async (t) => {
  const { base } = await serve(t);
  const ok = await curl(['--digest', '-u', 'admin:secret', `${base}/config`]);
  t.equal(ok.code, 200, 'admin with SHA-256 (curl takes the first challenge)');
  t.same(JSON.parse(ok.body), {});

  const write = await curl([
    '--digest',
    '-u',
    'admin:secret',
    '-X',
    'PATCH',
    '-H',
    'content-type: application/merge-patch+json',
    '--data',
    '{"server":{"name":"x"}}',
    `${base}/config`,
  ]);
  t.equal(write.code, 200, 'admin writes');
  t.match(JSON.parse(write.body), { etag: String, plan: { format: 'sluice-plan/1' } });

  const bad = await curl(['--digest', '-u', 'admin:wrong', `${base}/config`]);
  t.equal(bad.code, 401, 'wrong password');
  t.equal(JSON.parse(bad.body).status, 401);

  const nobody = await curl(['--digest', '-u', 'nobody:secret', `${base}/config`]);
  t.equal(nobody.code, 401, 'unknown user');

  const view = await curl(['--digest', '-u', 'viewer:look', `${base}/data/status`]);
  t.equal(view.code, 200, 'viewer reads /data/status');
  const metrics = await curl(['--digest', '-u', 'viewer:look', `${base}/metrics`]);
  t.equal(metrics.code, 200, 'viewer reads /metrics');
  const readConfig = await curl(['--digest', '-u', 'viewer:look', `${base}/config`]);
  t.equal(readConfig.code, 403, 'viewer may not read /config');
  const put = await curl([
    '--digest',
    '-u',
    'viewer:look',
    '-X',
    'PUT',
    '-H',
    'content-type: application/json',
    '--data',
    '{}',
    `${base}/config`,
  ]);
  t.equal(put.code, 403, 'viewer PUT is forbidden');
  t.same(JSON.parse(put.body), { status: 403, message: 'Role viewer may not PUT /config' });
});

t.test('curl --digest with MD5 when the server offers only MD5', async (t) => {
  const { base } = await serve(t, { digestAlgorithms: ['MD5'] });
  const ok = await curl(['--digest', '-u', 'admin:secret', `${base}/config`]);
  t.equal(ok.code, 200);
  const bad = await curl(['--digest', '-u', 'admin:nope', `${base}/config`]);
  t.equal(bad.code, 401);
});

t.test('a replayed nonce count is refused', async (t) => {
  const { base } = await serve(t);
  const first = await get(`${base}/config`, { from: OTHER_LOCAL });
  const ch = challenges(first)[0]!;
  const signed = (nc: string) => ({
    from: OTHER_LOCAL,
    headers: {
      authorization: sign(ch, {
        method: 'GET',
        uri: '/config',
        login: 'admin',
        password: 'secret',
        nc,
      }),
    },
  });
  t.equal((await get(`${base}/config`, signed('00000001'))).status, 200);
  t.equal((await get(`${base}/config`, signed('00000001'))).status, 401, 'same nc again');
  t.equal((await get(`${base}/config`, signed('00000002'))).status, 200, 'next nc');
  const replay = await get(`${base}/config`, signed('00000002'));
  t.equal(replay.status, 401);
  t.notMatch(challenges(replay)[0], /stale/, 'a replay is not stale');
});

t.test('an expired nonce gets stale=true; a fresh one works', async (t) => {
  const { base, ctx } = await serve(t, { nonceLifetimeSec: 30 });
  const ch = challenges(await get(`${base}/config`, { from: OTHER_LOCAL }))[0]!;
  ctx.clock.advance(31_000);
  const auth = sign(ch, {
    method: 'GET',
    uri: '/config',
    login: 'admin',
    password: 'secret',
    nc: '00000001',
  });
  const stale = await get(`${base}/config`, {
    from: OTHER_LOCAL,
    headers: { authorization: auth },
  });
  t.equal(stale.status, 401);
  t.match(challenges(stale)[0], /stale=true/);
  t.same(JSON.parse(stale.body), { status: 401, message: 'Nonce expired' });
  const fresh = sign(challenges(stale)[0]!, {
    method: 'GET',
    uri: '/config',
    login: 'admin',
    password: 'secret',
    nc: '00000001',
  });
  const ok = await get(`${base}/config`, { from: OTHER_LOCAL, headers: { authorization: fresh } });
  t.equal(ok.status, 200);
});

t.test('OTT paths need no Digest; unknown paths still do', async (t) => {
  const { base, ctx } = await serve(t);
  ctx.ottRouter.register('news', (_req, reply, rest) => reply.send(`news:${rest}`));
  const play = await get(`${base}/news/index.m3u8`, { from: OTHER_LOCAL });
  t.equal(play.status, 200);
  t.equal(play.body, 'news:index.m3u8');
  const missing = await get(`${base}/nothing/mpegts`, { from: OTHER_LOCAL });
  t.equal(missing.status, 404);
  t.same(JSON.parse(missing.body), { status: 404, message: 'No stream nothing' });
  const unknown = await get(`${base}/whatever`, { from: OTHER_LOCAL, method: 'POST' });
  t.equal(unknown.status, 401, 'unknown non-OTT path asks for credentials first');
});
