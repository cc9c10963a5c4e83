// The webhook's real POST against local receivers: a 2xx delivers, another status fails, a
// receiver that never answers fails after the timeout, a closed port fails at once. Receivers
// that read the POST and never answer, or trickle their answer, are given up at the timeout even
// with garbage collections forced all the while, and the connection to them is closed.
import http from 'node:http';
import t, { type Test } from 'tap';
import { httpPost } from '../../src/alerting/http-post.ts';
import { collectGarbageRepeatedly } from '../helpers/gc.ts';
import { freePort } from '../helpers/server.ts';
import { type SlowPeerMode, serveOnLoopback, startSlowPeer } from '../helpers/slow-peer.ts';

/** Elapsed time is only an upper bound: a busy machine is late, never early. */
const MARGIN_MS = 3000;
const CLOSE_WITHIN_MS = 2000;

/** A loopback receiver answering with `status`, or never when `status` is 0. */
async function receiver(t: Test, status: number) {
  const got: { type?: string; agent?: string; body: string }[] = [];
  const srv = http.createServer((req, res) => {
    let body = '';
    req.on('data', (d) => (body += d));
    req.on('end', () => {
      got.push({ type: req.headers['content-type'], agent: req.headers['user-agent'], body });
      if (status) res.writeHead(status).end('ignored');
    });
  });
  return { got, url: `${await serveOnLoopback(t, srv)}/hook` };
}

const never = new AbortController().signal;

t.test('a 2xx answer delivers the JSON body', async (t) => {
  const r = await receiver(t, 204);
  await httpPost(r.url, '{"event":"raise"}', 2000, never);
  t.same(r.got, [{ type: 'application/json', agent: 'sluice-alerter', body: '{"event":"raise"}' }]);
});

t.test('another status is a failure naming it', async (t) => {
  const r = await receiver(t, 503);
  await t.rejects(httpPost(r.url, '{}', 2000, never), /HTTP 503/);
});

t.test('a receiver that never answers fails after the timeout', async (t) => {
  const r = await receiver(t, 0);
  const started = Date.now();
  await t.rejects(httpPost(r.url, '{}', 500, never));
  const took = Date.now() - started;
  t.ok(took >= 450 && took < 3000, `gave up after ${took} ms (timeout 500 ms)`);
});

t.test('a closed port fails at once; an abort stops a POST', async (t) => {
  const port = await freePort();
  await t.rejects(httpPost(`http://127.0.0.1:${port}/`, '{}', 2000, never));
  const r = await receiver(t, 0);
  const abort = new AbortController();
  const p = httpPost(r.url, '{}', 10_000, abort.signal);
  abort.abort();
  await t.rejects(p);
});

for (const mode of ['silent', 'trickle'] as SlowPeerMode[]) {
  t.test(
    `a ${mode} receiver, collections forced: given up at the timeout, connection closed`,
    async (t) => {
      collectGarbageRepeatedly(t);
      const peer = await startSlowPeer(t, mode);
      const started = performance.now();
      const err = await httpPost(peer.url, '{"event":"raise"}', 1000, never).then(
        () => new Error('delivered'),
        (e: Error) => e,
      );
      const took = performance.now() - started;
      // A trickling receiver has sent a 200 already: its body is not waited for.
      if (mode === 'trickle') t.equal(err.message, 'delivered', 'a 2xx head delivers');
      else t.equal(err.message, `no answer from ${peer.url} in 1 s`);
      t.ok(took < 1000 + MARGIN_MS, `settled after ${Math.round(took)} ms (timeout 1 s)`);
      t.same(peer.bodies, ['{"event":"raise"}']);
      await peer.closed(0, CLOSE_WITHIN_MS);
      t.equal(peer.open(), 0, 'no connection left to the receiver');
    },
  );
}
