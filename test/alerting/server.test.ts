// The alerter in the real server (a child `sluice serve` on loopback): a udp stream fed by
// ffmpeg; the source stops → after stream-timeout and alert-delay a webhook POST reaches a
// receiver written here, /data/alerts and the SSE feed show it; the source back → cleared.
// Then the receiver goes away (closed port): alerts still show at once, the server answers,
// the webhook retries are counted. A receiver that reads the POST and never answers costs each
// event `webhook-timeout-sec`, garbage collections or not: its connection is closed and the
// next event goes.
import type { ChildProcess } from 'node:child_process';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import t, { type Test } from 'tap';
import { gcPressureNodeOptions } from '../helpers/gc.ts';
import { freePort, startServer } from '../helpers/server.ts';
import { startSlowPeer } from '../helpers/slow-peer.ts';
import { makeFixture, playFixture, tempDir, waitFor } from '../helpers/stream-host.ts';

/** Elapsed time is only an upper bound: a busy machine is late, never early. */
const MARGIN_MS = 4000;

interface Posted {
  at: number;
  body: { event: string; rule: string; subject: string; id: string; seq: number };
}

/** A webhook receiver on a free loopback port that records every JSON POST. */
async function receiver(t: Test) {
  const posts: Posted[] = [];
  const srv = http.createServer((req, res) => {
    let body = '';
    req.on('data', (d) => (body += d));
    req.on('end', () => {
      if (req.method === 'POST' && req.headers['content-type'] === 'application/json') {
        posts.push({ at: Date.now(), body: JSON.parse(body) as Posted['body'] });
      }
      res.writeHead(204).end();
    });
  });
  await new Promise<void>((r) => srv.listen(0, '127.0.0.1', r));
  const close = () =>
    new Promise<void>((r) => {
      srv.closeAllConnections();
      srv.close(() => r());
    });
  t.teardown(() => (srv.listening ? close() : undefined));
  return { posts, port: (srv.address() as AddressInfo).port, close };
}

/** The SSE feed, read with fetch: the events received so far. */
async function feed(t: Test, url: string) {
  const events: { event: string; data: { rule?: string; event?: string } }[] = [];
  const abort = new AbortController();
  t.teardown(() => abort.abort());
  const res = await fetch(`${url}/data/alerts/events`, { signal: abort.signal });
  t.equal(
    res.headers.get('content-type'),
    'text/event-stream; charset=utf-8',
    'the feed is an event stream',
  );
  void (async () => {
    const dec = new TextDecoder();
    let buf = '';
    try {
      for await (const chunk of res.body!) {
        buf += dec.decode(chunk as Uint8Array, { stream: true });
        for (let i = buf.indexOf('\n\n'); i >= 0; i = buf.indexOf('\n\n')) {
          const block = buf.slice(0, i);
          buf = buf.slice(i + 2);
          const ev = /^event: (.*)$/m.exec(block)?.[1];
          const data = /^data: (.*)$/m.exec(block)?.[1];
          if (ev && data) events.push({ event: ev, data: JSON.parse(data) });
        }
      }
    } catch {
      // aborted at teardown
    }
  })();
  return events;
}

async function getJson<T>(url: string): Promise<T> {
  const res = await fetch(url, { signal: AbortSignal.timeout(5000) });
  if (!res.ok) throw new Error(`${url}: HTTP ${res.status}`);
  return (await res.json()) as T;
}

interface AlertsBody {
  enabled: boolean;
  active: { rule: string; subject: string; id: string }[];
  recent: { event: string; rule: string; id: string }[];
  webhook: { sent: number; failed: number; retries: number; queued: number };
}

t.test('stream down → webhook POST after alert-delay; restored → cleared', async (t) => {
  const dir = tempDir(t, 'sluice-alert-');
  const fixture = makeFixture(dir, 4);
  const hook = await receiver(t);
  const udpPort = await freePort();
  const server = await startServer(t, {
    config: {
      alerter: {
        'webhook-url': `http://127.0.0.1:${hook.port}/hook`,
        'clear-sec': 2,
        'webhook-retries': 3,
        'webhook-timeout-sec': 2,
      },
      stream: [
        {
          id: 1,
          'stream-name': 'news',
          pause: false,
          'stream-timeout': 2_000_000,
          'alert-delay': 3,
          input: [{ type: 'udp', port: udpPort }],
        },
      ],
    },
  });
  const url = server.url;
  const alerts = () => getJson<AlertsBody>(`${url}/data/alerts`);
  const source = (): ChildProcess =>
    playFixture(t, fixture, 'mpegts', `udp://127.0.0.1:${udpPort}?pkt_size=1316`);
  const state = async () => (await getJson<{ state: string }>(`${url}/data/stream/news`)).state;

  let ff = source();
  await waitFor(async () => (await state()) === 'running', 20_000, 'the stream running').catch(
    async (err) => {
      t.comment(JSON.stringify(await getJson(`${url}/data/stream/news`)).slice(0, 2000));
      t.comment(server.output());
      throw err;
    },
  );
  const events = await feed(t, url);
  await waitFor(() => events.some((e) => e.event === 'active'), 5000, 'the feed opened');
  t.same((await alerts()).active, [], 'no alert while it runs');

  // The source stops.
  ff.kill('SIGKILL');
  const stoppedAt = Date.now();
  const raise = await waitFor(
    () => hook.posts.find((p) => p.body.event === 'raise' && p.body.rule === 'stream-down'),
    20_000,
    'the raise POST',
  );
  if (!raise) throw new Error('unreachable');
  const after = raise.at - stoppedAt;
  // No signal after stream-timeout (2 s), raised alert-delay (3 s) later: not before 5 s.
  t.ok(after >= 5000, `raised ${after} ms after the source stopped (≥ 2 s timeout + 3 s delay)`);
  t.ok(after < 10_000, `and promptly (${after} ms)`);
  t.match(
    raise.body,
    { subject: 'news', severity: 'critical', kind: 'stream', seq: Number, server: String },
    'the JSON body names the stream, severity and event',
  );
  const a = await alerts();
  t.match(a.active, [{ rule: 'stream-down', subject: 'news', id: raise.body.id }], '/data/alerts');
  await waitFor(
    () => events.some((e) => e.event === 'raise' && e.data.rule === 'stream-down'),
    5000,
    'the raise on the SSE feed',
  );

  // The source is back: cleared after clear-sec.
  ff = source();
  const clear = await waitFor(
    () => hook.posts.find((p) => p.body.event === 'clear' && p.body.id === raise.body.id),
    20_000,
    'the clear POST',
  );
  if (!clear) throw new Error('unreachable');
  t.ok(clear.at > raise.at, 'the clear came after the raise');
  t.same((await alerts()).active, [], 'nothing active after the clear');
  t.same(
    (await alerts()).recent.filter((e) => e.id === raise.body.id).map((e) => e.event),
    ['clear', 'raise'],
    'both in the history, newest first',
  );
  await waitFor(() => events.some((e) => e.event === 'clear'), 5000, 'the clear on the feed');
  t.equal(
    (await getJson<AlertsBody>(`${url}/data/alerts?limit=1`)).recent.length,
    1,
    '?limit bounds the history answer',
  );
  const head = await fetch(`${url}/data/alerts/events`, {
    method: 'HEAD',
    signal: AbortSignal.timeout(5000),
  });
  t.equal(head.status, 200, 'HEAD of the feed answers at once');

  // The receiver goes away: its port is closed. Nothing else waits for it.
  await hook.close();
  const postsBefore = hook.posts.length;
  ff.kill('SIGKILL');
  const t0 = Date.now();
  await waitFor(
    async () => (await alerts()).active.some((x) => x.rule === 'stream-down'),
    20_000,
    'the second raise in /data/alerts',
  );
  const second = Date.now() - t0;
  t.ok(second < 10_000, `raised in ${second} ms with the receiver down`);
  const started = Date.now();
  await getJson(`${url}/data/status`);
  t.ok(Date.now() - started < 2000, 'the admin API answers at once');
  await waitFor(async () => (await alerts()).webhook.retries > 0, 10_000, 'a failed POST retried');
  const metrics = await (await fetch(`${url}/metrics`)).text();
  t.match(metrics, /sluice_alert_webhook_retries_total [1-9]/, 'retries on /metrics');
  t.match(
    metrics,
    /sluice_alerts_raised_total\{rule="stream-down",severity="critical"\} 2/,
    'two raises counted on /metrics',
  );
  t.equal(hook.posts.length, postsBefore, 'nothing reached the closed receiver');
  ff = source();
  await waitFor(
    async () => (await alerts()).active.length === 0,
    20_000,
    'cleared again with the receiver down',
  );
  ff.kill('SIGKILL');
});

t.test(
  'a receiver that never answers: each POST given up at the timeout, the next one sent',
  async (t) => {
    const peer = await startSlowPeer(t, 'silent');
    const timeoutSec = 1;
    const server = await startServer(t, {
      config: {
        alerter: {
          'webhook-url': peer.url,
          'webhook-timeout-sec': timeoutSec,
          'webhook-retries': 0,
          'delay-sec': 0,
        },
        // Two sources that cannot import: two epg-import alerts, two POSTs in a row.
        epg: {
          source: [
            { id: 1, name: 'a', source: '/nonexistent/sluice-a.xml', enable: true },
            { id: 2, name: 'b', source: '/nonexistent/sluice-b.xml', enable: true },
          ],
        },
      },
      // The server collects garbage every 50 ms all along: a deadline a collection can lose is lost.
      env: { NODE_OPTIONS: gcPressureNodeOptions() },
    });
    await peer.received(0, 30_000).catch((err: Error) => {
      t.comment(server.output());
      throw err;
    });
    const sent = performance.now();
    await peer.closed(0, timeoutSec * 1000 + MARGIN_MS);
    const closed = performance.now() - sent;
    t.ok(
      closed < timeoutSec * 1000 + MARGIN_MS,
      `first connection closed after ${Math.round(closed)} ms`,
    );
    await peer.received(1, MARGIN_MS);
    t.match(
      JSON.parse(peer.bodies[1]!),
      { event: 'raise', rule: 'epg-import' },
      'the next event went',
    );
    await peer.closed(1, timeoutSec * 1000 + MARGIN_MS);
    const stats = await waitFor(
      async () => {
        const w = (await getJson<AlertsBody>(`${server.url}/data/alerts`)).webhook;
        return w.failed >= 2 ? w : undefined;
      },
      5000,
      'both events given up',
    );
    t.match(stats, { sent: 0, retries: 0 }, 'nothing delivered, nothing retried');
    t.equal(peer.open(), 0, 'no connection left to the receiver');
  },
);
