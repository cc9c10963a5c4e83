// The hls input's HTTP side against a Node server on loopback: Digest (checked by the admin
// API's own authenticator) and Basic, cookies and User-Agent sent, bounded redirects, the
// segment size cap, the progressive modes (2, and 0 detecting a transport stream), and plain
// http:// over our own kept-alive connections (src/inputs/hls/http1-pool.ts).
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import t, { type Test } from 'tap';
import { DigestAuthenticator } from '../../src/api/auth/digest.ts';
import { BodyBuffers } from '../../src/inputs/hls/body-buffers.ts';
import { HttpClient } from '../../src/inputs/hls/http.ts';
import { HlsInput } from '../../src/inputs/hls/input.ts';
import { systemClock } from '../../src/util/clock.ts';
import { type Collected, inputContext } from '../helpers/input-ctx.ts';
import { waitFor } from '../helpers/stream-host.ts';

type Handler = (req: http.IncomingMessage, res: http.ServerResponse) => void;

async function server(t: Test, h: Handler): Promise<string> {
  const s = http.createServer(h);
  await new Promise<void>((r) => s.listen(0, '127.0.0.1', r));
  t.teardown(() => new Promise<void>((r) => s.close(() => r())));
  t.teardown(() => s.closeAllConnections());
  return `http://127.0.0.1:${(s.address() as AddressInfo).port}`;
}

function client(extra: Partial<ConstructorParameters<typeof HttpClient>[0]> = {}): HttpClient {
  return new HttpClient({
    userAgent: '',
    cookies: '',
    login: '',
    password: '',
    timeoutMs: 2000,
    maxSockets: 2,
    ...extra,
  });
}

t.test('Digest: challenge answered, later requests authenticated at once', async (t) => {
  const auth = new DigestAuthenticator({
    realm: 'origin',
    clock: systemClock,
    lifetimeSec: 60,
    algorithms: ['MD5'],
    password: (l) => (l === 'u' ? 'p w' : undefined),
  });
  let challenged = 0;
  const base = await server(t, (req, res) => {
    const r = auth.verify('GET', req.url ?? '', String(req.headers.authorization ?? ''));
    if (!r.ok) {
      challenged++;
      res.writeHead(401, { 'WWW-Authenticate': auth.challenges() }).end();
      return;
    }
    res.end('#EXTM3U\n');
  });
  const c = client({ login: 'u', password: 'p w' });
  t.teardown(() => c.close());
  t.equal((await c.get(`${base}/a.m3u8`, { maxBytes: 100 })).body.toString(), '#EXTM3U\n');
  t.equal((await c.get(`${base}/b.m3u8`, { maxBytes: 100 })).body.toString(), '#EXTM3U\n');
  t.equal(challenged, 1, 'challenged once, the session reused');
  const wrong = client({ login: 'u', password: 'bad' });
  t.teardown(() => wrong.close());
  await t.rejects(
    wrong.get(`${base}/a.m3u8`, { maxBytes: 100 }),
    /401 from origin: login or password refused/,
  );
});

t.test('Basic, cookies, User-Agent, redirects (bounded), size cap', async (t) => {
  const seen: http.IncomingHttpHeaders[] = [];
  const base = await server(t, (req, res) => {
    seen.push(req.headers);
    if (req.headers.authorization !== `Basic ${Buffer.from('u:p').toString('base64')}`) {
      res.writeHead(401, { 'WWW-Authenticate': 'Basic realm="x"' }).end();
    } else if (req.url === '/loop') res.writeHead(302, { Location: '/loop' }).end();
    else if (req.url === '/moved') res.writeHead(301, { Location: '/big' }).end();
    else if (req.url === '/big') res.end(Buffer.alloc(5000));
    else res.end('ok');
  });
  const c = client({ login: 'u', password: 'p', cookies: 'a=1; b=2', userAgent: 'probe/1' });
  t.teardown(() => c.close());
  t.equal((await c.get(`${base}/x`, { maxBytes: 10 })).body.toString(), 'ok');
  t.equal(seen.at(-1)!.cookie, 'a=1; b=2');
  t.equal(seen.at(-1)!['user-agent'], 'probe/1');
  await t.rejects(c.get(`${base}/loop`, { maxBytes: 10 }), /more than 5 redirects/);
  const r = await c.get(`${base}/moved`, { maxBytes: 10_000 });
  t.equal(r.url, `${base}/big`, 'redirect followed');
  await t.rejects(c.get(`${base}/big`, { maxBytes: 1000 }), /over the cap/);
});

const PACKET = Buffer.alloc(188, 0xff);
PACKET[0] = 0x47;
PACKET[1] = 0x1f;
PACKET[2] = 0xff;
PACKET[3] = 0x10;

for (const mode of [0, 2]) {
  t.test(`progressive HTTP-TS (mode ${mode}), reopened when it ends`, async (t) => {
    let requests = 0;
    const base = await server(t, (_req, res) => {
      requests++;
      res.end(Buffer.concat(Array.from({ length: 10 }, () => PACKET)));
    });
    const got: Collected = { bytes: 0, discontinuities: [] };
    const inp = new HlsInput({ uri: `${base}/live.ts`, mode }, inputContext(got));
    inp.start();
    t.teardown(() => inp.close());
    await waitFor(() => requests >= 2 && got.discontinuities.length > 0, 5000, 'reopened');
    t.ok(got.bytes >= 1880, 'bytes delivered');
    t.equal(inp.status()['kind'], 'progressive');
    t.ok(got.discontinuities.includes('origin reopened'), 'splice at the reopen');
  });
}

t.test('mode 1 on a transport stream: named, not played', async (t) => {
  const base = await server(t, (_req, res) => res.end(Buffer.concat([PACKET, PACKET, PACKET])));
  const inp = new HlsInput({ uri: `${base}/x.ts`, mode: 1 }, inputContext());
  inp.start();
  t.teardown(() => inp.close());
  await waitFor(() => inp.fault(), 5000, 'fault');
  t.match(inp.fault(), /not an HLS playlist/);
});

t.test('plain http: one kept-alive connection, bodies in reused memory', async (t) => {
  const sockets = new Set<unknown>();
  const base = await server(t, (req, res) => {
    sockets.add(req.socket);
    if (req.url === '/chunked') {
      res.write('part one, ');
      res.end('part two');
    } else res.end(Buffer.alloc(100_000, Number(req.url?.slice(1)) || 0));
  });
  const c = client();
  t.teardown(() => c.close());
  const bodies = new BodyBuffers();
  const a = await c.get(`${base}/1`, { maxBytes: 1 << 20, bodies });
  t.equal(a.body.length, 100_000);
  t.ok(
    a.body.every((x) => x === 1),
    'first body',
  );
  const first = a.body.buffer;
  bodies.give(a.body);
  const b = await c.get(`${base}/2`, { maxBytes: 1 << 20, bodies });
  t.ok(
    b.body.every((x) => x === 2),
    'second body',
  );
  t.equal(b.body.buffer, first, 'the second body is written into the first one’s memory');
  const ch = await c.get(`${base}/chunked`, { maxBytes: 1000 });
  t.equal(ch.body.toString(), 'part one, part two', 'chunked body');
  t.equal(sockets.size, 1, 'three requests on one connection');
});

t.test('plain http: a large body read in place, in pieces, then the next answer', async (t) => {
  // 3 MB in 100 pieces, a pause after each tenth: many socket reads, most of them larger than
  // the shared 64 KiB buffer once the body has begun.
  const SIZE = 3_000_000;
  const pattern = (i: number) => (i * 7 + (i >> 9)) & 0xff;
  const whole = Buffer.alloc(SIZE);
  for (let i = 0; i < SIZE; i++) whole[i] = pattern(i);
  const base = await server(t, async (req, res) => {
    if (req.url === '/small') return void res.end('after');
    res.setHeader('content-length', SIZE);
    const piece = SIZE / 100;
    for (let i = 0; i < 100; i++) {
      res.write(whole.subarray(i * piece, (i + 1) * piece));
      if (i % 10 === 9) await new Promise((r) => setTimeout(r, 5));
    }
    res.end();
  });
  const c = client();
  t.teardown(() => c.close());
  const bodies = new BodyBuffers();
  for (let round = 0; round < 2; round++) {
    const a = await c.get(`${base}/big`, { maxBytes: 1 << 23, bodies });
    t.equal(a.body.length, SIZE, `round ${round}: the whole body`);
    t.ok(a.body.equals(whole), `round ${round}: every byte in its place`);
    bodies.give(a.body);
    const s = await c.get(`${base}/small`, { maxBytes: 100 });
    t.equal(s.body.toString(), 'after', `round ${round}: the next answer on the connection`);
  }
});

t.test('plain http: an idle connection the origin closed is replaced', async (t) => {
  const base = await server(t, (req, res) => {
    res.end('ok');
    // Close the connection right after answering, with keep-alive announced.
    res.on('finish', () => req.socket.destroy());
  });
  const c = client();
  t.teardown(() => c.close());
  for (let i = 0; i < 3; i++) {
    t.equal((await c.get(`${base}/x`, { maxBytes: 10 })).body.toString(), 'ok', `request ${i}`);
  }
});

t.test('plain http: no answer in time, a body over the cap', async (t) => {
  const base = await server(t, (req, res) => {
    if (req.url === '/big') res.end(Buffer.alloc(5000));
    // else: never answered
  });
  const c = client({ timeoutMs: 200 });
  t.teardown(() => c.close());
  await t.rejects(c.get(`${base}/slow`, { maxBytes: 10 }), /no answer from origin in 0.2 s/);
  const big = await c.get(`${base}/big`, { maxBytes: 100 }).catch((e: unknown) => e);
  t.match(big, { tooBig: true, message: /over the cap/ });
});
