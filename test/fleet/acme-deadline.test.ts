// acme-client's requests through our deadline (src/fleet/acme-http.ts), on acme-client's own axios
// instance and interceptors: a CA that reads the request and never answers, or trickles its
// answer, fails the request at the deadline in words, not retried, its connection closed, with
// garbage collections forced all along. An answer keeps axios's shape: status, headers, JSON.
import http from 'node:http';
import acme from 'acme-client';
import t from 'tap';
import { deadlineAdapter } from '../../src/fleet/acme-http.ts';
import { collectGarbageRepeatedly } from '../helpers/gc.ts';
import { type SlowPeerMode, serveOnLoopback, startSlowPeer } from '../helpers/slow-peer.ts';

/** Elapsed time is only an upper bound: a busy machine is late, never early. */
const MARGIN_MS = 3000;
const CLOSE_WITHIN_MS = 2000;

const cases: [SlowPeerMode, string][] = [
  ['silent', 'no answer from URL in 1 s'],
  ['trickle', 'answer from URL not complete in 1 s'],
];
for (const [mode, message] of cases) {
  t.test(`a ${mode} CA: the request fails at the deadline, once`, async (t) => {
    collectGarbageRepeatedly(t);
    const peer = await startSlowPeer(t, mode, '/dir');
    const started = performance.now();
    const err = await acme.axios
      .request({ url: peer.url, method: 'get', adapter: deadlineAdapter(1000) })
      .then(
        () => new Error('answered'),
        (e: Error) => e,
      );
    const took = performance.now() - started;
    t.equal(err.message, message.replace('URL', peer.url));
    t.ok(took < 1000 + MARGIN_MS, `failed after ${Math.round(took)} ms (deadline 1 s)`);
    await peer.closed(0, CLOSE_WITHIN_MS);
    t.equal(peer.bodies.length, 1, 'not retried');
    t.equal(peer.open(), 0, 'no connection left to the CA');
  });
}

t.test('an answer keeps the shape acme-client reads', async (t) => {
  let seen: http.IncomingHttpHeaders = {};
  let body = '';
  const srv = http.createServer((req, res) => {
    seen = req.headers;
    req.on('data', (d: Buffer) => (body += d.toString()));
    req.on('end', () =>
      res
        .writeHead(400, { 'content-type': 'application/problem+json', 'replay-nonce': 'n1' })
        .end('{"type":"urn:ietf:params:acme:error:malformed","detail":"bad"}'),
    );
  });
  const base = await serveOnLoopback(t, srv);
  const res = await acme.axios.request({
    url: `${base}/acme/new-order`,
    method: 'post',
    data: { protected: 'p', payload: 'x', signature: 's' },
    headers: { 'Content-Type': 'application/jose+json' },
    validateStatus: null,
    adapter: deadlineAdapter(5000),
  });
  t.equal(res.status, 400, 'a 4xx is an answer acme-client judges itself');
  t.same(res.data, { type: 'urn:ietf:params:acme:error:malformed', detail: 'bad' });
  t.equal(res.headers['replay-nonce'], 'n1');
  t.equal(seen['content-type'], 'application/jose+json');
  t.match(seen['user-agent'], /^node-acme-client\//);
  t.same(JSON.parse(body), { protected: 'p', payload: 'x', signature: 's' });
});

t.test('acme-client uses the adapter once src/fleet/acme.ts is loaded', async (t) => {
  await import('../../src/fleet/acme.ts');
  t.type(acme.axios.defaults.adapter, 'function');
});
