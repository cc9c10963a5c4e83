// The outbound request's deadline against peers that never finish, with garbage collections
// forced all along: a peer that reads the POST and never answers, and one that trickles a byte a
// second after its headers, are both given up at the deadline and their connection closed. Then
// what a client must do besides: the no-progress limit, redirects (credentials kept to their
// origin, a POST turned GET), a body cap, the caller's stop, a refused port, an injected clock.
import http from 'node:http';
import t, { type Test } from 'tap';
import { ManualClock } from '../../src/util/clock.ts';
import {
  OutboundRequestError,
  openWithDeadline,
  requestWithDeadline,
} from '../../src/util/outbound-request.ts';
import { collectGarbageRepeatedly } from '../helpers/gc.ts';
import { freePort } from '../helpers/server.ts';
import { serveOnLoopback, startSlowPeer } from '../helpers/slow-peer.ts';

/** Elapsed time is only an upper bound: a busy 2-core machine is late, never early. */
const MARGIN_MS = 3000;
/** How long the peer may wait for the client to drop the connection after the deadline. */
const CLOSE_WITHIN_MS = 2000;

async function failure(p: Promise<unknown>): Promise<OutboundRequestError> {
  const err = await p.then(
    () => undefined,
    (e: unknown) => e,
  );
  if (!(err instanceof OutboundRequestError)) throw new Error(`expected a failure, got ${err}`);
  return err;
}

/** A well-behaved server: `answer` decides each request; every request is recorded. */
async function server(
  t: Test,
  answer: (req: http.IncomingMessage, res: http.ServerResponse) => void,
) {
  const seen: { method: string; url: string; headers: http.IncomingHttpHeaders; body: string }[] =
    [];
  const srv = http.createServer((req, res) => {
    let body = '';
    req.on('data', (d: Buffer) => (body += d.toString()));
    req.on('end', () => {
      seen.push({ method: req.method ?? '', url: req.url ?? '', headers: req.headers, body });
      answer(req, res);
    });
  });
  return { seen, base: await serveOnLoopback(t, srv) };
}

t.test('a peer that reads the POST and never answers: given up at the deadline', async (t) => {
  collectGarbageRepeatedly(t);
  const peer = await startSlowPeer(t, 'silent');
  const started = performance.now();
  const err = await failure(
    requestWithDeadline(peer.url, { method: 'POST', body: '{"a":1}', deadlineMs: 1000 }),
  );
  const took = performance.now() - started;
  t.equal(err.kind, 'deadline');
  t.equal(err.message, `no answer from ${peer.url} in 1 s`);
  t.ok(took < 1000 + MARGIN_MS, `rejected after ${Math.round(took)} ms (deadline 1 s)`);
  t.same(peer.bodies, ['{"a":1}'], 'the peer had read the whole POST');
  await peer.closed(0, CLOSE_WITHIN_MS);
  t.equal(peer.open(), 0, 'no connection left to the peer');
});

t.test('a peer that trickles a byte a second: given up at the deadline', async (t) => {
  collectGarbageRepeatedly(t);
  const peer = await startSlowPeer(t, 'trickle');
  const started = performance.now();
  const answer = await openWithDeadline(peer.url, { deadlineMs: 2500, idleMs: 2000 });
  t.equal(answer.status, 200, 'the headers came');
  let bytes = 0;
  const err = await failure(
    (async () => {
      for await (const c of answer.chunks) bytes += c.length;
    })(),
  );
  const took = performance.now() - started;
  t.equal(err.kind, 'deadline', 'bytes kept coming within the idle limit: the deadline ends it');
  t.equal(err.message, `answer from ${peer.url} not complete in 2.5 s`);
  t.ok(bytes >= 1, `${bytes} bytes before it`);
  t.ok(took < 2500 + MARGIN_MS, `rejected after ${Math.round(took)} ms (deadline 2.5 s)`);
  await peer.closed(0, CLOSE_WITHIN_MS);
  t.equal(peer.open(), 0, 'no connection left to the peer');

  const buffered = await failure(requestWithDeadline(peer.url, { deadlineMs: 1500 }));
  t.match(buffered.message, /not complete in 1.5 s$/, 'the buffered form too');
  await peer.closed(1, CLOSE_WITHIN_MS);
});

t.test('no progress for the idle limit fails before the deadline', async (t) => {
  const peer = await startSlowPeer(t, 'trickle');
  const answer = await openWithDeadline(peer.url, { deadlineMs: 60_000, idleMs: 300 });
  const err = await failure(
    (async () => {
      for await (const _ of answer.chunks);
    })(),
  );
  t.equal(err.kind, 'idle');
  t.equal(err.message, `no data from ${peer.url} for 0.3 s`);
  await peer.closed(0, CLOSE_WITHIN_MS);
});

t.test('redirects: followed, bounded, credentials kept to their origin', async (t) => {
  const other = await server(t, (_req, res) => res.end('elsewhere'));
  const s = await server(t, (req, res) => {
    const path = req.url?.split('?')[0];
    if (path === '/moved') res.writeHead(302, { location: '/here' }).end();
    else if (path === '/away') res.writeHead(307, { location: `${other.base}/there` }).end();
    else if (path === '/see') res.writeHead(303, { location: '/here' }).end();
    else if (path === '/loop') res.writeHead(302, { location: '/loop' }).end();
    else if (path === '/ftp') res.writeHead(302, { location: 'ftp://127.0.0.1/x' }).end();
    else res.end(`here ${req.method}`);
  });
  const secret = { authorization: 'Basic c2VjcmV0', cookie: 'a=b', 'x-kept': '1' };
  const a = await requestWithDeadline(`${s.base}/moved?k=v`, { headers: secret, deadlineMs: 5000 });
  t.equal(a.body.toString(), 'here GET');
  t.equal(a.url, `${s.base}/here`, 'the URL it came from, without its query');
  t.equal(s.seen.at(-1)!.headers.authorization, secret.authorization, 'same origin: kept');

  const b = await requestWithDeadline(`${s.base}/away`, {
    method: 'POST',
    body: 'x',
    headers: secret,
    deadlineMs: 5000,
  });
  t.equal(b.body.toString(), 'elsewhere');
  t.match(
    other.seen[0],
    { method: 'POST', body: 'x', headers: { 'x-kept': '1' } },
    '307 keeps the method',
  );
  t.notOk(other.seen[0]!.headers.authorization, 'another origin: no Authorization');
  t.notOk(other.seen[0]!.headers.cookie, 'another origin: no Cookie');

  const c = await requestWithDeadline(`${s.base}/see`, {
    method: 'POST',
    body: 'x',
    headers: { 'content-type': 'text/plain' },
    deadlineMs: 5000,
  });
  t.equal(c.body.toString(), 'here GET', '303 turns a POST into a GET');
  t.notOk(s.seen.at(-1)!.headers['content-type'], 'without the body headers');

  const loop = await failure(requestWithDeadline(`${s.base}/loop`, { deadlineMs: 5000 }));
  t.equal(loop.kind, 'redirects');
  t.equal(loop.message, `more than 20 redirects from ${s.base}/loop`);
  const ftp = await failure(requestWithDeadline(`${s.base}/ftp`, { deadlineMs: 5000 }));
  t.match(ftp.message, /redirects to a ftp: URL; only http and https are followed/);
  const kept = await requestWithDeadline(`${s.base}/moved`, { deadlineMs: 5000, maxRedirects: 0 });
  t.equal(kept.status, 302, 'maxRedirects 0: the 3xx is the answer');
});

t.test('a body over its cap fails with the status; a query never shows', async (t) => {
  const s = await server(t, (_req, res) => res.writeHead(201).end('x'.repeat(100)));
  const err = await failure(
    requestWithDeadline(`${s.base}/big?secret=s3cr3t`, { deadlineMs: 5000, maxBodyBytes: 10 }),
  );
  t.match(err, { kind: 'too-large', status: 201 });
  t.equal(err.message, `answer from ${s.base}/big over 10 bytes`);
  const ok = await requestWithDeadline(`${s.base}/big`, { deadlineMs: 5000, maxBodyBytes: 100 });
  t.equal(ok.body.length, 100, 'a body at the cap is whole');
});

t.test("the caller's stop, a refused port, a bad URL", async (t) => {
  const peer = await startSlowPeer(t, 'silent');
  const stop = new AbortController();
  const p = requestWithDeadline(peer.url, {
    method: 'POST',
    body: '{}',
    deadlineMs: 60_000,
    signal: stop.signal,
  });
  await peer.received(0, CLOSE_WITHIN_MS);
  stop.abort();
  const err = await failure(p);
  t.equal(err.kind, 'stopped');
  t.equal(err.message, `request to ${peer.url} stopped`);
  await peer.closed(0, CLOSE_WITHIN_MS);
  const early = await failure(
    requestWithDeadline(peer.url, { deadlineMs: 1000, signal: stop.signal }),
  );
  t.equal(early.kind, 'stopped', 'a signal already aborted sends nothing');
  t.equal(peer.bodies.length, 1);

  const port = await freePort();
  const refused = await failure(
    requestWithDeadline(`http://127.0.0.1:${port}/x`, { deadlineMs: 5000 }),
  );
  t.match(refused, { kind: 'network', code: 'ECONNREFUSED' });
  t.match(refused.message, new RegExp(`^http://127.0.0.1:${port}/x: connect ECONNREFUSED`));
  t.match(await failure(requestWithDeadline('ftp://x/y', { deadlineMs: 1 })), { kind: 'url' });
});

t.test('the deadline runs on the injected clock', async (t) => {
  const peer = await startSlowPeer(t, 'silent');
  const clock = new ManualClock();
  const p = requestWithDeadline(peer.url, {
    method: 'POST',
    body: '{}',
    deadlineMs: 30_000,
    clock,
  });
  await peer.received(0, CLOSE_WITHIN_MS);
  clock.advance(29_999);
  clock.advance(1);
  t.equal((await failure(p)).message, `no answer from ${peer.url} in 30 s`);
  await peer.closed(0, CLOSE_WITHIN_MS);
});
