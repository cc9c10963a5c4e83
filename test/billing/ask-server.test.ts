// One request to a billing server (askServer) against servers that never finish, garbage
// collections forced all along: one reads the request and never answers, one sends its headers
// and trickles a byte a second. Either is no verdict at `timeout`, saying so, and its connection
// is closed. A reply over the size cap is no verdict; a plain 200 allows.
import pino from 'pino';
import t from 'tap';
import { askServer, REPLY_LIMIT_BYTES } from '../../src/billing/server.ts';
import { billingServer, startBilling } from '../helpers/billing.ts';
import { collectGarbageRepeatedly } from '../helpers/gc.ts';
import { type SlowPeerMode, startSlowPeer } from '../helpers/slow-peer.ts';

const log = pino({ level: 'silent' });
/** Elapsed time is only an upper bound: a busy machine is late, never early. */
const MARGIN_MS = 3000;
const CLOSE_WITHIN_MS = 2000;
const VALUES = { event: 'auth', login: 'v', token: 't', ip: '10.0.0.1', stream: 'news' };

const cases: [SlowPeerMode, RegExp][] = [
  ['silent', /^no answer from http:\/\/127\.0\.0\.1:\d+\/auth in 1\.5 s$/],
  ['trickle', /^answer from http:\/\/127\.0\.0\.1:\d+\/auth not complete in 1\.5 s$/],
];
for (const [mode, why] of cases) {
  t.test(`a ${mode} server: no verdict at the timeout, its connection closed`, async (t) => {
    collectGarbageRepeatedly(t);
    const peer = await startSlowPeer(t, mode, '/auth');
    const server = billingServer(peer.url, { timeoutMs: 1500, requestBody: '{"login":"{login}"}' });
    const started = performance.now();
    const asked = await askServer(server, VALUES, log);
    const took = performance.now() - started;
    t.match(asked.judgement, { verdict: false, why });
    t.notMatch(asked.judgement, { why: /s3cret/ }, 'the query (the secret) is never shown');
    t.ok(took < 1500 + MARGIN_MS, `gave up after ${Math.round(took)} ms (timeout 1.5 s)`);
    t.same(peer.bodies, ['{"login":"v"}'], 'the server had read the request');
    await peer.closed(0, CLOSE_WITHIN_MS);
    t.equal(peer.open(), 0, 'no connection left to the server');
  });
}

t.test('a reply over the cap is no verdict; a 200 allows', async (t) => {
  const b = await startBilling((r) =>
    r.query.get('login') === 'big'
      ? { status: 200, body: 'x'.repeat(REPLY_LIMIT_BYTES + 1) }
      : { status: 200, body: 'ok' },
  );
  t.teardown(b.close);
  const server = billingServer(b.url);
  const big = await askServer(server, { ...VALUES, login: 'big' }, log);
  t.match(big, {
    status: 200,
    judgement: { verdict: false, why: `reply over ${REPLY_LIMIT_BYTES} bytes` },
  });
  const ok = await askServer(server, VALUES, log);
  t.match(ok, { status: 200, judgement: { verdict: true, allowed: true } });
});
