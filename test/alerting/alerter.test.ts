// The Alerter over fake sources on a ManualClock: stream faults damped by the stream's own gate
// (alert-delay), the rate rules, storages / EPG / adapters through delay-sec, min-severity,
// enable, the sinks (history, feed, webhook) and a receiver that never answers.
import pino from 'pino';
import t from 'tap';
import { Alerter, SWEEP_MS } from '../../src/alerting/alerter.ts';
import type { ErrorTotals } from '../../src/alerting/rules.ts';
import type {
  AdapterView,
  AlertSources,
  EpgSourceView,
  StorageView,
  StreamView,
} from '../../src/alerting/sources.ts';
import type { AlertEvent, AlerterSettings } from '../../src/alerting/types.ts';
import type { Poster } from '../../src/alerting/webhook.ts';
import { AlertGate } from '../../src/engine/alerts.ts';
import { ManualClock } from '../../src/util/clock.ts';

const log = pino({ level: 'silent' });

/** A stream as the engine would show it: its own gate, set by the "engine" every tick. */
class FakeStream implements StreamView {
  readonly gate: AlertGate;
  running = true;
  down = false;
  totals: ErrorTotals | null = { input: 0, p1: 0, cc: 0 };
  constructor(
    readonly name: string,
    clock: ManualClock,
    delayMs: number,
  ) {
    this.gate = new AlertGate(clock, log);
    this.gate.delayMs = delayMs;
    // The engine's 250 ms tick, registered before the alerter's sweep.
    clock.setInterval(() => {
      if (this.running) this.gate.set('no-signal', this.down, `stream ${name}: no signal`);
    }, 250);
  }
  alerts() {
    return this.gate.list();
  }
  errorTotals() {
    return this.totals;
  }
  report(key: string, present: boolean, message: string) {
    this.gate.set(key, present, message);
  }
}

function settings(over: Partial<AlerterSettings> = {}): AlerterSettings {
  return {
    enable: true,
    webhookUrl: 'http://127.0.0.1:9/hook',
    minSeverity: 'warning',
    repeatMs: 0,
    clearMs: 10_000,
    delayMs: 0,
    p1Rate: 1,
    ccRate: 0.1,
    errorWindowMs: 10_000,
    historySize: 500,
    webhookTimeoutMs: 5000,
    webhookRetries: 5,
    webhookQueueSize: 1000,
    ...over,
  };
}

function setup(over: Partial<AlerterSettings> = {}, delayMs = 5000, hang = false) {
  const clock = new ManualClock();
  const stream = new FakeStream('news', clock, delayMs);
  const storages: StorageView[] = [];
  const epg: EpgSourceView[] = [];
  const adapters: AdapterView[] = [];
  const sources: AlertSources = {
    streams: () => [stream],
    storages: () => storages,
    epgSources: () => epg,
    adapters: () => adapters,
  };
  const posted: AlertEvent[] = [];
  const post: Poster = async (_url, body) => {
    if (hang) return new Promise<void>(() => {});
    posted.push(JSON.parse(body) as AlertEvent);
  };
  const alerter = new Alerter(settings(over), { clock, log, sources, post, server: 'box' });
  const fed: AlertEvent[] = [];
  alerter.feed.subscribe((e) => fed.push(e));
  return { clock, stream, storages, epg, adapters, alerter, posted, fed };
}

const settle = () => new Promise((r) => setImmediate(r));

t.test('stream down: raised after alert-delay, cleared after clear-sec', async (t) => {
  const { clock, stream, alerter, posted, fed } = setup();
  clock.advance(3000);
  stream.down = true;
  clock.advance(4000);
  t.equal(alerter.active().length, 0, '4 s down with alert-delay 5 s: not yet');
  clock.advance(1000 + SWEEP_MS);
  const [a] = alerter.active();
  t.equal(a?.rule, 'stream-down');
  t.equal(a?.severity, 'critical');
  t.equal(a?.subject, 'news');
  t.equal(a?.key, 'stream:news/no-signal');
  await settle();
  t.equal(posted.length, 1, 'webhook POST');
  t.match(posted[0], { event: 'raise', rule: 'stream-down', server: 'box', seq: 1 });
  t.same(fed, posted, 'the feed got the same events');
  stream.down = false;
  clock.advance(9000);
  t.equal(alerter.active().length, 1, 'restored 9 s ago: still active (clear-sec 10)');
  clock.advance(2000);
  t.equal(alerter.active().length, 0, 'cleared');
  await settle();
  t.match(posted[1], { event: 'clear', id: a!.id, reason: 'fault gone' });
  t.same(
    alerter.recent().map((e) => e.event),
    ['clear', 'raise'],
    'history, newest first',
  );
});

t.test("a stream's enable-alert off (its gate disabled) raises nothing", async (t) => {
  const { clock, stream, alerter } = setup({}, 0);
  stream.gate.enabled = false;
  stream.down = true;
  clock.advance(30_000);
  t.equal(alerter.active().length, 0);
});

t.test('rate rules: priority-1 errors and CC errors, below min-severity only logged', async (t) => {
  const { clock, stream, alerter, fed } = setup({}, 0);
  // 3 priority-1 errors a second, all of them CC errors.
  let n = 0;
  clock.setInterval(() => {
    n += 3;
    stream.totals = { input: 0, p1: n, cc: n };
  }, 1000);
  clock.advance(12_000);
  const rules = alerter.active().map((a) => a.rule);
  t.same(rules, ['tr101290-p1'], 'p1 at 3/s ≥ 1/s raised; cc-errors (info) not listed');
  t.match(alerter.active()[0]!.message, /priority-1 errors 3\.0\/s over 10 s on input 0/);
  t.ok(alerter.counts.logOnly >= 1, 'the cc-errors raise was logged only');
  t.notOk(
    fed.some((e) => e.rule === 'cc-errors'),
    'nothing below min-severity in the feed',
  );
  t.ok(
    stream.gate.list().some((g) => g.key === 'tr101290-p1' && g.raised),
    "reported into the stream's own gate (its /data/stream alerts)",
  );
  alerter.update(settings({ minSeverity: 'info', p1Rate: 0 }));
  clock.advance(12_000);
  t.same(
    alerter.active().map((a) => a.rule),
    ['cc-errors'],
    'p1 rule off: cleared after clear-sec; cc-errors shown at min-severity info',
  );
});

t.test('storages, EPG sources and adapters go through delay-sec', async (t) => {
  const { clock, storages, epg, adapters, alerter } = setup({ delayMs: 3000 });
  storages.push({
    name: 'arch',
    state: 'error',
    message: 'directory unavailable: ENOENT',
    diskFull: true,
    usedPercent: 97.5,
    emergency: true,
    freeBytes: 1000,
  });
  epg.push({ id: 2, name: '2', state: 'error', lastError: 'HTTP 404' });
  adapters.push({ name: 'a1', enableAlert: true, locked: false, message: 'no carrier' });
  clock.advance(2000);
  t.equal(alerter.active().length, 0, '2 s: within delay-sec 3');
  clock.advance(2000);
  t.same(
    alerter
      .active()
      .map((a) => a.rule)
      .sort(),
    ['adapter-lock', 'disk-full', 'epg-import', 'storage-emergency', 'storage-error'],
  );
  t.match(
    alerter.active().find((a) => a.rule === 'epg-import')!.message,
    /EPG source 2: import failed: HTTP 404/,
  );
  storages.length = 0;
  epg[0]!.state = 'ready';
  adapters[0]!.locked = true;
  clock.advance(11_000);
  t.equal(alerter.active().length, 0, 'all cleared');
});

t.test('enable off clears the active alerts and stops; on again, they come back', async (t) => {
  const { clock, stream, alerter, posted } = setup({}, 0);
  stream.down = true;
  clock.advance(2000);
  t.equal(alerter.active().length, 1);
  alerter.update(settings({ enable: false }));
  t.equal(alerter.active().length, 0);
  await settle();
  t.match(posted[posted.length - 1], { event: 'clear', reason: 'alerter disabled' });
  const count = posted.length;
  clock.advance(30_000);
  await settle();
  t.equal(posted.length, count, 'nothing while disabled');
  alerter.update(settings());
  clock.advance(2000);
  t.equal(alerter.active().length, 1, 'raised again');
});

t.test('a webhook that never answers blocks neither sweeps, history nor feed', async (t) => {
  const { clock, stream, alerter, fed } = setup({ clearMs: 0, webhookQueueSize: 5 }, 0, true);
  for (let i = 0; i < 10; i++) {
    stream.down = !stream.down;
    clock.advance(2000);
  }
  t.equal(fed.length, 10, '5 raises and 5 clears reached the feed');
  t.equal(alerter.recent().length, 10);
  t.equal(alerter.webhookStats.queued, 6, 'one in flight, five waiting');
  t.equal(alerter.webhookStats.dropped, 4, 'the rest dropped, counted');
  alerter.close();
});

t.test('history keeps history-size events, newest first', async (t) => {
  const { clock, stream, alerter } = setup({ clearMs: 0, historySize: 10 }, 0);
  for (let i = 0; i < 20; i++) {
    stream.down = !stream.down;
    clock.advance(2000);
  }
  const r = alerter.recent();
  t.equal(r.length, 10);
  t.ok(r[0]!.seq > r[9]!.seq, 'newest first');
  t.equal(r[0]!.seq, 20);
  t.equal(alerter.recent(3).length, 3, 'limit');
});

t.test('a paused stream is left alone: no reports into its gate', async (t) => {
  const { clock, stream, alerter } = setup({}, 0);
  stream.running = false;
  clock.advance(5000);
  t.same(stream.gate.list(), [], 'nothing reported');
  t.equal(alerter.active().length, 0);
});
