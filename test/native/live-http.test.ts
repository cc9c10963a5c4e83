// The native live engine (native/net/live_http.cc through src/native/live-http.ts) on a real
// node:http server and raw loopback sockets: published keys are answered natively with Node's
// header set; every request it must not answer (other paths, queries, HEAD, Range, Expect,
// any Range but `bytes=0-`, HTTP/1.0, a body, no Host, bare LF, a pipelined miss) reaches Node
// unread on the same connection; bodies are released only after the last response using them;
// idle connections close after the keep-alive time; fresh silent ones go back to Node.
import http from 'node:http';
import t from 'tap';
import { LiveDelivery } from '../../src/native/live-http.ts';
import { RawClient } from '../helpers/raw-http.ts';
import { waitFor } from '../helpers/stream-host.ts';

function head(length: number, type = 'video/mp2t'): Buffer {
  return Buffer.from(`HTTP/1.1 200 OK\r\nContent-Type: ${type}\r\nContent-Length: ${length}\r\n`);
}

async function setup(
  t: { teardown(fn: () => unknown): void },
  opts: { keepAliveMs?: number } = {},
) {
  const delivery = new LiveDelivery({ keepAliveMs: opts.keepAliveMs ?? 5000 });
  const seen: string[] = [];
  const server = http.createServer((req, res) => {
    seen.push(`${req.method} ${req.url}`);
    const body = Buffer.from(`node ${req.method} ${req.url}`);
    res.writeHead(200, { 'Content-Type': 'text/plain', 'Content-Length': body.length });
    res.end(req.method === 'HEAD' ? undefined : body);
  });
  if (opts.keepAliveMs) server.keepAliveTimeout = opts.keepAliveMs;
  const detach = delivery.attach(server);
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  const port = (server.address() as { port: number }).port;
  const clients: RawClient[] = [];
  t.teardown(async () => {
    for (const c of clients) c.close();
    detach();
    delivery.close();
    server.closeAllConnections();
    await new Promise((r) => server.close(r));
  });
  return {
    delivery,
    seen,
    server,
    port,
    async client() {
      const c = await RawClient.open(port);
      clients.push(c);
      return c;
    },
  };
}

const get = (path: string, extra = '') => `GET ${path} HTTP/1.1\r\nHost: x\r\n${extra}\r\n`;

t.test('a published key is answered natively with Node’s header set', async (t) => {
  const s = await setup(t);
  const body = Buffer.from('segment bytes');
  s.delivery.publish('/a/seg.ts', head(body.length), body);
  const c = await s.client();
  for (let i = 0; i < 3; i++) {
    c.send(get('/a/seg.ts'));
    const r = await c.next();
    t.equal(r.status, 200);
    t.ok(r.body.equals(body), 'the body');
    t.same(r.names, ['Content-Type', 'Content-Length', 'Date', 'Connection', 'Keep-Alive']);
    t.match(r.headers.get('date'), /^[A-Z][a-z]{2}, \d\d [A-Z][a-z]{2} \d{4} \d\d:\d\d:\d\d GMT$/);
    t.equal(r.headers.get('connection'), 'keep-alive');
    t.equal(r.headers.get('keep-alive'), 'timeout=5');
  }
  t.same(s.seen, [], 'Node saw none of them');
  const st = s.delivery.stats();
  t.equal(st.served, 3);
  t.equal(st.adopted, 1);
  t.equal(st.connections, 1);
  t.equal(st.entries, 1);
  // Node's own response to the same kind of request carries the same three added headers.
  c.send(get('/not-published'));
  const n = await c.next();
  t.same(n.names.slice(-3), ['Date', 'Connection', 'Keep-Alive']);
  t.equal(n.headers.get('keep-alive'), 'timeout=5');
});

t.test('requests it must not answer reach Node unread, on the same connection', async (t) => {
  const s = await setup(t);
  const body = Buffer.from('published');
  s.delivery.publish('/a/seg.ts', head(body.length), body);
  const cases: [string, string, boolean?][] = [
    ['another path', get('/a/other.ts')],
    ['a query string', get('/a/seg.ts?x=1')],
    ['HEAD', 'HEAD /a/seg.ts HTTP/1.1\r\nHost: x\r\n\r\n', true],
    ['a Range', get('/a/seg.ts', 'Range: bytes=0-3\r\n')],
    ['a suffix Range', get('/a/seg.ts', 'Range: bytes=-100\r\n')],
    ['two Range headers', get('/a/seg.ts', 'Range: bytes=0-\r\nRange: bytes=0-\r\n')],
    ['Expect', get('/a/seg.ts', 'Expect: 100-continue\r\n')],
    ['HTTP/1.0', 'GET /a/seg.ts HTTP/1.0\r\nHost: x\r\n\r\n'],
    ['a body', 'GET /a/seg.ts HTTP/1.1\r\nHost: x\r\nContent-Length: 2\r\n\r\nhi'],
    ['a lower-case range header', get('/a/seg.ts', 'range: bytes=0-3\r\n')],
    ['Connection: upgrade', get('/a/seg.ts', 'Connection: Upgrade\r\n')],
  ];
  for (const [what, req, isHead] of cases) {
    const c = await s.client();
    c.send(req);
    let r = await c.next(isHead);
    if (r.status === 100) r = await c.next(); // Node's own 100 Continue to the Expect
    t.equal(r.status, 200, what);
    if (!isHead) t.match(r.body.toString(), /^node /, `${what}: answered by Node`);
    c.close();
  }
  t.equal(s.seen.length, cases.length, 'Node saw every one');
  t.equal(s.delivery.stats().served, 0);

  // Refusals are Node's own: no Host header, a bare-LF request.
  const noHost = await s.client();
  noHost.send('GET /a/seg.ts HTTP/1.1\r\n\r\n');
  t.equal((await noHost.next()).status, 400, 'no Host: Node answers 400');
  const lf = await s.client();
  lf.send('GET /a/seg.ts HTTP/1.1\nHost: x\n\n');
  const r = await lf.next().catch((e: Error) => e);
  t.ok(r instanceof Error || r.status === 400 || r.status === 200, 'bare LF: Node decides');
  t.equal(s.delivery.stats().served, 0, 'neither answered natively');

  // Native first, then a miss: Node keeps the connection from then on, hits included.
  const c = await s.client();
  c.send(get('/a/seg.ts'));
  t.equal((await c.next()).body.toString(), 'published');
  c.send(get('/a/miss'));
  t.equal((await c.next()).body.toString(), 'node GET /a/miss');
  c.send(get('/a/seg.ts'));
  t.equal((await c.next()).body.toString(), 'node GET /a/seg.ts', 'Node now answers the hit too');
});

t.test('pipelined and split requests', async (t) => {
  const s = await setup(t);
  const body = Buffer.from('P');
  s.delivery.publish('/p', head(1), body);
  const c = await s.client();
  c.send(get('/p') + get('/p') + get('/p'));
  for (let i = 0; i < 3; i++) t.equal((await c.next()).body.toString(), 'P', `pipelined ${i}`);
  // A hit followed by a miss in one write: the hit natively, the miss (unread) by Node.
  c.send(get('/p') + get('/q'));
  t.equal((await c.next()).body.toString(), 'P');
  t.equal((await c.next()).body.toString(), 'node GET /q');
  t.equal(s.delivery.stats().served, 4);

  // A request dribbled in byte by byte: each piece is sent after the previous one was
  // received by the server's kernel (the client waits for the write to drain).
  const d = await s.client();
  const req = Buffer.from(get('/p'));
  for (let i = 0; i < req.length; i++) {
    await new Promise<void>((r) => d.socket.write(req.subarray(i, i + 1), () => r()));
  }
  t.equal((await d.next()).body.toString(), 'P', 'answered once complete');
  t.equal(s.delivery.stats().served, 5);
});

t.test('a body is released only after the last response using it', async (t) => {
  const s = await setup(t);
  const body = Buffer.alloc(16 * 1024 * 1024);
  for (let i = 0; i < body.length; i += 4096) body.writeUInt32BE(i, i);
  let released = 0;
  s.delivery.publish('/big', head(body.length), body, () => released++);
  const c = await s.client();
  c.socket.pause(); // the response stalls in the socket buffers
  c.send(get('/big'));
  // Wait until the engine is writing it (bytes counted, not yet served).
  while (s.delivery.stats().bytes === 0) await new Promise((r) => setImmediate(r));
  t.equal(s.delivery.unpublish('/big'), true);
  t.equal(s.delivery.stats().entries, 0);
  t.equal(released, 0, 'not released while the response is in flight');
  // A new request for it is no longer answered natively.
  const other = await s.client();
  other.send(get('/big'));
  t.match((await other.next()).body.toString(), /^node /);
  c.socket.resume();
  const r = await c.next();
  t.ok(r.body.equals(body), 'the whole body, intact');
  const done = new Promise<void>((resolve) => {
    const check = () => (released === 1 ? resolve() : setImmediate(check));
    check();
  });
  await done;
  t.equal(released, 1, 'released once, after the response');
  // Replacing an entry releases the old body.
  let old = 0;
  s.delivery.publish('/r', head(1), Buffer.from('1'), () => old++);
  s.delivery.publish('/r', head(1), Buffer.from('2'));
  while (old === 0) await new Promise((r) => setImmediate(r));
  t.equal(old, 1);
  c.send(get('/r'));
  t.equal((await c.next()).body.toString(), '2');
});

t.test('keep-alive timeout closes; a silent fresh connection goes back to Node', async (t) => {
  const s = await setup(t, { keepAliveMs: 1000 });
  s.delivery.publish('/k', head(1), Buffer.from('K'));
  const c = await s.client();
  c.send(get('/k'));
  const r = await c.next();
  t.equal(r.headers.get('keep-alive'), 'timeout=1');
  await c.closed();
  t.ok(s.delivery.stats().closedIdle >= 1, 'closed as idle');

  const fresh = await s.client();
  await waitFor(
    () => s.delivery.stats().handedBack > 0,
    10_000,
    'the silent connection handed back',
  );
  fresh.send(get('/k'));
  t.equal((await fresh.next()).body.toString(), 'node GET /k', 'Node has it now');
});

t.test('detach drops the engine’s connections; close releases everything', async (t) => {
  const delivery = new LiveDelivery();
  const server = http.createServer((_req, res) => res.end('n'));
  const detach = delivery.attach(server);
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  const port = (server.address() as { port: number }).port;
  let released = 0;
  delivery.publish('/d', head(1), Buffer.from('D'), () => released++);
  const c = await RawClient.open(port);
  c.send(get('/d'));
  t.equal((await c.next()).body.toString(), 'D');
  detach();
  await c.closed();
  t.pass('the connection was closed');
  // After detach the server's own listener is back: Node answers new connections.
  const n = await RawClient.open(port);
  n.send(get('/d'));
  t.equal((await n.next()).body.toString(), 'n');
  n.close();
  delivery.close();
  t.equal(released, 1, 'close released the published body');
  t.throws(() => delivery.publish('/x', head(1), Buffer.from('x')), /closed/);
  server.closeAllConnections();
  await new Promise((r) => server.close(r));
});

t.test('with nothing published, connections stay with Node', async (t) => {
  const s = await setup(t);
  const c = await s.client();
  c.send(get('/a'));
  t.equal((await c.next()).body.toString(), 'node GET /a');
  t.equal(s.delivery.stats().adopted, 0, 'not adopted');
});

t.test('bounded fuzz: mutated requests get an answer or a close, never a hang', async (t) => {
  const s = await setup(t);
  s.delivery.publish('/f', head(1), Buffer.from('F'));
  let seed = 20261121;
  const rnd = (n: number) => {
    seed = (seed * 1103515245 + 12345) & 0x7fffffff;
    return seed % n;
  };
  const base = Buffer.from(get('/f', 'User-Agent: fuzz\r\nAccept: */*\r\n'));
  const ROUNDS = 200;
  const deadline = Date.now() + 30_000;
  const seen = { native: 0, node: 0, closed: 0 };
  let i = 0;
  for (; i < ROUNDS && Date.now() < deadline; i++) {
    let req = Buffer.from(base);
    switch (i % 4) {
      case 0: // a few bytes flipped
        for (let k = 0, n = 1 + rnd(3); k < n; k++) {
          const at = rnd(req.length);
          req[at] = req[at]! ^ (1 << rnd(8));
        }
        break;
      case 1: // cut short
        req = req.subarray(0, rnd(req.length));
        break;
      case 2: // a byte inserted
        {
          const at = rnd(req.length);
          req = Buffer.concat([req.subarray(0, at), Buffer.from([rnd(256)]), req.subarray(at)]);
        }
        break;
      default: // noise
        req = Buffer.from(Array.from({ length: 1 + rnd(300) }, () => rnd(256)));
    }
    const c = await s.client();
    c.send(req);
    c.socket.end(); // nothing more will come: whoever holds the connection must settle it
    const r = await c.next().catch(() => undefined);
    if (!r) seen.closed++;
    else if (r.body.toString() === 'F') seen.native++;
    else seen.node++;
    c.close();
  }
  t.equal(i, ROUNDS, `${ROUNDS} rounds within the time bound`);
  t.ok(seen.native > 0, `answered natively: ${seen.native}`);
  t.ok(seen.node + seen.closed > 0, `left to Node: ${seen.node} answered, ${seen.closed} closed`);
  const c = await s.client();
  c.send(get('/f'));
  t.equal((await c.next()).body.toString(), 'F', 'the engine still answers');
});

t.test('`Range: bytes=0-` and `Connection: close`, as ffmpeg and VLC send them', async (t) => {
  const s = await setup(t);
  const body = Buffer.from('0123456789');
  const partial = Buffer.from(
    `HTTP/1.1 206 Partial Content\r\nContent-Range: bytes 0-9/10\r\nContent-Length: 10\r\n`,
  );
  s.delivery.publish('/seg', head(10), body, undefined, partial);
  s.delivery.publish('/pl', head(2, 'text/plain'), Buffer.from('PL'));
  const c = await s.client();
  c.send(get('/seg', 'Range: bytes=0-\r\nIcy-MetaData: 1\r\n'));
  const r = await c.next();
  t.equal(r.status, 206, 'a 206 where the entry has a from-zero head');
  t.equal(r.headers.get('content-range'), 'bytes 0-9/10');
  t.ok(r.body.equals(body), 'the whole body');
  c.send(get('/pl', 'range:  bytes=0-  \r\n'));
  const p = await c.next();
  t.equal(p.status, 200, 'the plain head where it has none (ranges do not apply)');
  t.equal(p.body.toString(), 'PL');
  t.equal(s.delivery.stats().served, 2, 'both natively, on one kept connection');

  // Connection: close: answered natively, said in the response, then the connection ends.
  const k = await s.client();
  k.send(get('/seg', 'Connection: close\r\n'));
  const kr = await k.next();
  t.equal(kr.status, 200);
  t.equal(kr.headers.get('connection'), 'close');
  t.equal(kr.headers.get('keep-alive'), undefined, 'no Keep-Alive header');
  await k.closed();
  t.pass('the server ended the connection');
  t.equal(s.delivery.stats().served, 3);
  t.same(s.seen, [], 'Node saw none of them');
  // A second request pipelined behind the close is not answered (as Node does).
  const q = await s.client();
  q.send(get('/pl', 'Connection: keep-alive, Close\r\n') + get('/pl'));
  t.equal((await q.next()).body.toString(), 'PL');
  await q.closed();
  t.equal(s.delivery.stats().served, 4, 'one answer, then the end');
});

t.test('entries replaced while responses are in flight: every body arrives whole', async (t) => {
  const s = await setup(t);
  const KEYS = 4;
  const CLIENTS = 10;
  const REQUESTS = 40;
  let version = 0;
  let released = 0;
  // Each version of a body is one repeated letter: a response mixing versions (bytes of a
  // body already let go) would show two letters.
  const publish = (k: number) => {
    const size = 100_000 + ((version * 7919) % 200_000);
    const body = Buffer.alloc(size, 65 + (version++ % 26));
    s.delivery.publish(`/r${k}`, head(size), body, () => released++);
  };
  for (let k = 0; k < KEYS; k++) publish(k);
  const churn = setInterval(() => publish(version % KEYS), 1);
  t.teardown(() => clearInterval(churn));
  let mixed = 0;
  await Promise.all(
    Array.from({ length: CLIENTS }, async (_, i) => {
      const c = await s.client();
      for (let n = 0; n < REQUESTS; n++) {
        c.send(get(`/r${(i + n) % KEYS}`));
        const r = await c.next();
        if (r.body.some((b) => b !== r.body[0])) mixed++;
      }
    }),
  );
  clearInterval(churn);
  t.equal(mixed, 0, 'no response mixes two versions');
  t.equal(s.delivery.stats().served, CLIENTS * REQUESTS, 'all answered natively');
  t.ok(version > KEYS, `${version - KEYS} replacements during the run`);
  const before = released;
  s.delivery.close();
  t.equal(released, version, `every version released (${before} before close)`);
});

t.test('gated: only requests holding a live viewer pass are answered natively', async (t) => {
  const s = await setup(t);
  const body = Buffer.from('segment bytes');
  s.delivery.publish('/a/seg.ts', head(body.length), body, undefined, undefined, true);
  // A document names its URIs with each viewer's credentials: never a pass holder's.
  s.delivery.publish('/a/index.m3u8', head(2), Buffer.from('PL'));
  s.delivery.setGated(true);
  s.delivery.grant('token=ok', '127.0.0.1', 'a', 60_000);
  s.delivery.grant('token=short', '127.0.0.1', 'a', 1);
  s.delivery.grant('token=elsewhere', '127.0.0.9', 'a', 60_000);
  const cases: [string, boolean][] = [
    ['/a/seg.ts?token=ok', true],
    ['/a/seg.ts', false], // no query while gated
    ['/a/seg.ts?token=bad', false],
    ['/a/seg.ts?token=ok&x=1', false], // not exactly the granted query
    ['/b/seg.ts?token=ok', false], // another stream
    ['/a/seg.ts?token=elsewhere', false], // granted to another address
    ['/a/seg.ts?token=short', false], // expired
    ['/a/nope.ts?token=ok', false], // not published
    ['/a/index.m3u8?token=ok', false], // a document: the app writes the viewer's query into it
  ];
  await new Promise((r) => setTimeout(r, 5)); // fixed wait: lets the 1 ms pass expire
  for (const [path, native] of cases) {
    const c = await s.client();
    const seen = s.seen.length;
    c.send(get(path));
    const r = await c.next();
    t.equal(r.status, 200, path);
    t.equal(s.seen.length === seen, native, `${path}: ${native ? 'native' : 'Node'}`);
    if (native) t.ok(r.body.equals(body));
  }
  const use = s.delivery.takePassUse();
  t.same(
    use.map((u) => [u.query, u.ip, u.stream, u.requests]),
    [['token=ok', '127.0.0.1', 'a', 1]],
  );
  t.ok(use[0]!.bytes > body.length, `${use[0]!.bytes} bytes counted (head and body)`);
  t.same(s.delivery.takePassUse(), [], 'counters reset once read');
  s.delivery.revoke('token=ok', '127.0.0.1', 'a');
  const c = await s.client();
  const before = s.seen.length;
  c.send(get('/a/seg.ts?token=ok'));
  await c.next();
  t.equal(s.seen.length, before + 1, 'a revoked pass goes to Node');
  s.delivery.setGated(false);
  const d = await s.client();
  const was = s.seen.length;
  d.send(get('/a/seg.ts'));
  t.ok((await d.next()).body.equals(body));
  t.equal(s.seen.length, was, 'ungated: a plain request is native again');
  t.throws(() => s.delivery.grant('', '127.0.0.1', 'a', 1000), /non-empty/);
  t.throws(() => s.delivery.grant('q', '127.0.0.1', 'a', 0), /positive/);
});
