// WebhookSink: one POST at a time in order, retries with backoff on the injected clock, gives
// up after webhook-retries, a bounded queue that drops its oldest and counts it; push() never
// waits for the receiver.
import pino from 'pino';
import t from 'tap';
import type { AlertEvent } from '../../src/alerting/types.ts';
import { BACKOFF_MAX_MS, backoffMs, type Poster, WebhookSink } from '../../src/alerting/webhook.ts';
import { ManualClock } from '../../src/util/clock.ts';

interface Call {
  url: string;
  seq: number;
  timeoutMs: number;
  signal: AbortSignal;
  ok(): void;
  fail(msg: string): void;
}

function fakePoster(): { post: Poster; calls: Call[] } {
  const calls: Call[] = [];
  const post: Poster = (url, body, timeoutMs, signal) =>
    new Promise<void>((resolve, reject) => {
      calls.push({
        url,
        seq: (JSON.parse(body) as AlertEvent).seq,
        timeoutMs,
        signal,
        ok: resolve,
        fail: (m) => reject(new Error(m)),
      });
    });
  return { post, calls };
}

function ev(seq: number): AlertEvent {
  return {
    event: 'raise',
    seq,
    at: '2026-01-01T00:00:00.000Z',
    server: 'test',
    id: `x-${seq}`,
    rule: 'stream-down',
    severity: 'critical',
    kind: 'stream',
    subject: 'news',
    key: 'stream:news/no-signal',
    message: 'down',
    since: '2026-01-01T00:00:00.000Z',
    raisedAt: '2026-01-01T00:00:00.000Z',
  };
}

const settle = () => new Promise((r) => setImmediate(r));
const log = pino({ level: 'silent' });
const settings = { url: 'http://127.0.0.1:9/hook', timeoutMs: 5000, retries: 3, queueSize: 3 };

t.test('backoff: 1 s doubling, capped at 60 s', async (t) => {
  t.same([1, 2, 3, 4].map(backoffMs), [1000, 2000, 4000, 8000]);
  t.equal(backoffMs(20), BACKOFF_MAX_MS);
});

t.test('in order, one at a time, with the timeout', async (t) => {
  const clock = new ManualClock();
  const { post, calls } = fakePoster();
  const w = new WebhookSink(settings, { clock, log, post });
  w.push(ev(1));
  w.push(ev(2));
  t.equal(calls.length, 1, 'the second waits for the first');
  t.equal(calls[0]!.timeoutMs, 5000);
  t.equal(calls[0]!.url, settings.url);
  t.equal(w.stats.queued, 2);
  calls[0]!.ok();
  await settle();
  t.equal(calls.length, 2);
  t.equal(calls[1]!.seq, 2);
  calls[1]!.ok();
  await settle();
  t.same({ sent: w.stats.sent, queued: w.stats.queued }, { sent: 2, queued: 0 });
});

t.test('a failed POST is retried after the backoff, then given up', async (t) => {
  const clock = new ManualClock();
  const { post, calls } = fakePoster();
  const w = new WebhookSink(settings, { clock, log, post });
  w.push(ev(1));
  calls[0]!.fail('connect ECONNREFUSED');
  await settle();
  t.equal(calls.length, 1, 'no retry before the backoff');
  clock.advance(999);
  t.equal(calls.length, 1);
  clock.advance(1);
  t.equal(calls.length, 2, 'retry 1 after 1 s');
  calls[1]!.fail('HTTP 500');
  await settle();
  clock.advance(2000);
  t.equal(calls.length, 3, 'retry 2 after 2 s more');
  calls[2]!.fail('timeout');
  await settle();
  clock.advance(4000);
  t.equal(calls.length, 4, 'retry 3 after 4 s more');
  w.push(ev(2));
  t.equal(calls.length, 4, 'the next event waits behind the one being retried');
  calls[3]!.fail('timeout');
  await settle();
  t.equal(w.stats.failed, 1, 'given up after 3 retries');
  t.equal(w.stats.retries, 3);
  t.equal(w.stats.lastError, 'timeout');
  t.equal(calls.length, 5, 'then the next event goes out at once');
  t.equal(calls[4]!.seq, 2);
});

t.test('a full queue drops its oldest waiting event and counts it', async (t) => {
  const clock = new ManualClock();
  const { post, calls } = fakePoster();
  const w = new WebhookSink(settings, { clock, log, post });
  for (let i = 1; i <= 6; i++) w.push(ev(i));
  t.equal(calls.length, 1, 'push never waits: 6 queued with one in flight');
  t.equal(w.stats.dropped, 2, 'queue of 3 behind the one in flight: 2 dropped');
  t.equal(w.stats.queued, 4);
  for (let i = 0; i < 4; i++) {
    calls[i]!.ok();
    await settle();
  }
  t.same(
    calls.map((c) => c.seq),
    [1, 4, 5, 6],
    'the oldest waiting (2, 3) were dropped',
  );
});

t.test('emptying the URL drops what waits and aborts the event in flight', async (t) => {
  const clock = new ManualClock();
  const { post, calls } = fakePoster();
  const w = new WebhookSink(settings, { clock, log, post });
  w.push(ev(1));
  w.push(ev(2));
  w.update({ ...settings, url: '' });
  t.ok(calls[0]!.signal.aborted, 'in flight: aborted');
  t.equal(w.stats.dropped, 2);
  t.equal(w.stats.queued, 0);
  w.push(ev(3));
  t.equal(calls.length, 1, 'no URL: nothing is queued or sent');
  w.update(settings);
  w.push(ev(4));
  t.equal(calls.length, 2);
  t.equal(calls[1]!.seq, 4);
});

t.test('close cancels the retry timer and the request in flight', async (t) => {
  const clock = new ManualClock();
  const { post, calls } = fakePoster();
  const w = new WebhookSink(settings, { clock, log, post });
  w.push(ev(1));
  calls[0]!.fail('down');
  await settle();
  w.close();
  clock.advance(120_000);
  t.equal(calls.length, 1, 'no retry after close');
  w.push(ev(2));
  t.equal(calls.length, 1, 'nothing sent after close');
});
