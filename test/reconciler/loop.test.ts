// The reconcile loop against recording fake drivers: dependency order, idempotency, one
// change touching one instance, failure isolation, backoff on a manual clock, coalescing,
// kinds without a driver, and the applied-state file.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pino from 'pino';
import t from 'tap';
import type { Resource } from '../../src/config/types.ts';
import { silentLogger } from '../../src/log.ts';
import { DriverError } from '../../src/reconciler/driver.ts';
import { DriverRegistry } from '../../src/reconciler/driver-registry.ts';
import { createHost } from '../../src/reconciler/host.ts';
import { PENDING_NO_DRIVER, ReconcileLoop } from '../../src/reconciler/loop.ts';
import { planIsEmpty } from '../../src/reconciler/plan.ts';
import { loadStateFile } from '../../src/reconciler/state-file.ts';
import { ManualClock } from '../../src/util/clock.ts';
import { desired, fakeRules, res, stream } from '../helpers/desired.ts';
import { type CallLog, fakeDriver, gate, newCallLog } from '../helpers/fake-driver.ts';

function setup(opts: { kinds?: Resource['kind'][]; stateFile?: string } = {}) {
  const log = newCallLog();
  const registry = new DriverRegistry();
  for (const k of opts.kinds ?? ['storage', 'stream', 'stream-adaptive', 'user']) {
    registry.register(fakeDriver(k, log));
  }
  const clock = new ManualClock(0);
  const host = createHost({ log: silentLogger, clock, dataDir: '/nonexistent' });
  const loop = new ReconcileLoop({
    registry,
    rules: fakeRules,
    host,
    clock,
    log: silentLogger,
    stateFile: opts.stateFile,
  });
  return { log, loop, clock };
}

const storage = (id: number) =>
  res({ kind: 'storage', key: String(id), spec: { id, name: `s${id}`, 'dir-path': `/d${id}` } });
const ref = (kind: Resource['kind'], key: string) => ({ kind, key });

/** A small world: storage, an MPTS stream, a demuxer of it using the storage, a group. */
function world(extra: Record<string, unknown> = {}): Resource[] {
  return [
    res({
      kind: 'stream-adaptive',
      key: '1',
      spec: { id: 1, name: 'g', stream: [2] },
      deps: [ref('stream', '2')],
    }),
    stream(2, 'demux', { input: [{ type: 'demuxer', 'mpts-id': 1 }], ...extra }, [
      ref('stream', '1'),
      ref('storage', '7'),
    ]),
    stream(1, 'mux', { mpts: true }),
    storage(7),
  ];
}

t.test('applies in dependency order and tears down in reverse', async (t) => {
  const { log, loop } = setup();
  const r = await loop.submit(desired(world()), 'test');
  t.equal(r.refused, false);
  t.same(log.calls, [
    'create storage/7',
    'create stream/1',
    'create stream/2',
    'create stream-adaptive/1',
  ]);
  t.same(
    r.results.map((x) => x.outcome),
    ['created', 'created', 'created', 'created'],
  );
  log.calls.length = 0;
  await loop.submit(desired([]), 'test');
  t.same(log.calls, [
    'close stream-adaptive/1',
    'close stream/2',
    'close stream/1',
    'close storage/7',
  ]);
  t.equal(loop.actual().size, 0);
});

t.test('close() tears everything down in reverse dependency order', async (t) => {
  const { log, loop } = setup();
  await loop.submit(desired(world()), 'test');
  log.calls.length = 0;
  await loop.close();
  t.same(log.calls, [
    'close stream-adaptive/1',
    'close stream/2',
    'close stream/1',
    'close storage/7',
  ]);
  await t.rejects(loop.submit(desired(world()), 'test'));
});

t.test('idempotent: applying the same state twice does nothing the second time', async (t) => {
  const { log, loop } = setup();
  const d = desired(world());
  await loop.submit(d, 'test');
  t.ok(planIsEmpty(loop.plan(d)), 'plan after apply shows no changes');
  t.ok(planIsEmpty(loop.plan(desired(world()))), 'an equal, separately built state too');
  log.calls.length = 0;
  const again = await loop.submit(desired(world()), 'test');
  t.same(log.calls, []);
  t.ok(again.results.every((r) => r.outcome === 'unchanged'));
});

t.test('a change to one of 1,000 streams touches that instance only', async (t) => {
  const { log, loop } = setup();
  const streams = (n: number, changed?: number) =>
    Array.from({ length: n }, (_, i) =>
      stream(i + 1, `s${i + 1}`, {
        input: [{ type: 'udp', port: 5000 + i }],
        ...(i + 1 === changed ? { 'stream-timeout': 5000000 } : {}),
      }),
    );
  await loop.submit(desired(streams(1000)), 'test');
  t.equal(log.calls.length, 1000);
  log.calls.length = 0;
  const r = await loop.submit(desired(streams(1000, 500)), 'test');
  t.same(log.calls, ['update stream/500']);
  t.same(log.updates[0]?.changes, [
    { path: 'stream-timeout', before: 30000000, after: 5000000, apply: 'hot' },
  ]);
  t.equal(r.results.filter((x) => x.outcome === 'updated').length, 1);
  t.ok(planIsEmpty(loop.plan(desired(streams(1000, 500)))));
});

t.test('a change inside one input is handed over with its restart scope', async (t) => {
  const { log, loop } = setup();
  const s = (port: number) =>
    stream(1, 'a', {
      input: [
        { type: 'udp', port: 1 },
        { type: 'udp', port },
      ],
    });
  await loop.submit(desired([s(2)]), 'test');
  await loop.submit(desired([s(3)]), 'test');
  t.same(log.updates[0]?.changes, [
    { path: 'input[1].port', before: 2, after: 3, apply: 'restart', scope: 'input[1]' },
  ]);
});

t.test('replace closes then creates', async (t) => {
  const { log, loop } = setup();
  await loop.submit(desired([stream(1, 'a')]), 'test');
  log.calls.length = 0;
  const r = await loop.submit(desired([stream(1, 'a', { mpts: true })]), 'test');
  t.same(log.calls, ['close stream/1', 'create stream/1']);
  t.equal(r.results[0]?.outcome, 'replaced');
});

t.test('one failing resource does not block the others', async (t) => {
  const { log, loop } = setup();
  log.failures.set('create stream/2', () => new Error('boom'));
  const r = await loop.submit(desired([stream(1, 'a'), stream(2, 'b'), stream(3, 'c')]), 'test');
  t.same(
    r.results.map((x) => [x.key, x.outcome]),
    [
      ['1', 'created'],
      ['2', 'failed'],
      ['3', 'created'],
    ],
  );
  t.notOk(loop.actual().has('stream/2'), 'a failed create is not in the actual state');
  const p = loop.plan(desired([stream(1, 'a'), stream(2, 'b'), stream(3, 'c')]));
  t.same(
    p.changes.filter((c) => c.action !== 'unchanged').map((c) => [c.key, c.action]),
    [['2', 'create']],
  );
  const st = loop.status().resources.find((x) => x.key === '2');
  t.match(st, { state: 'failed', error: 'boom', attempts: 1 });
});

t.test('retryable failures back off exponentially on the clock and reset on success', async (t) => {
  const { log, loop, clock } = setup();
  log.failures.set('create stream/1', () => new DriverError('port busy', true));
  await loop.submit(desired([stream(1, 'a')]), 'test');
  const creates = () => log.calls.filter((c) => c === 'create stream/1').length;
  t.equal(creates(), 1);
  t.match(loop.status().resources[0], {
    state: 'failed',
    attempts: 1,
    nextRetryAt: new Date(1000).toISOString(),
  });

  // Attempts at +1 s, then +2 s, then +4 s.
  const settle = () => new Promise((r) => setImmediate(r));
  clock.advance(999);
  await settle();
  t.equal(creates(), 1, 'not before the delay');
  clock.advance(1);
  await settle();
  t.equal(creates(), 2);
  t.equal(loop.status().resources[0]?.attempts, 2);
  clock.advance(1999);
  await settle();
  t.equal(creates(), 2);
  clock.advance(1);
  await settle();
  t.equal(creates(), 3);
  t.match(loop.status().resources[0], { attempts: 3, nextRetryAt: new Date(7000).toISOString() });

  // A new submit of the same spec before the retry falls due does not retry early.
  await loop.submit(desired([stream(1, 'a')]), 'test');
  t.equal(creates(), 3);

  log.failures.delete('create stream/1');
  clock.advance(4000);
  await settle();
  t.equal(creates(), 4);
  t.match(loop.status().resources[0], { state: 'running', outcome: 'created' });
  t.notOk(loop.status().resources[0]?.error);
});

t.test('backoff is capped at five minutes', async (t) => {
  const { backoffDelay, BACKOFF_MAX_MS } = await import('../../src/reconciler/apply.ts');
  t.same([1, 2, 3, 9, 10, 30].map(backoffDelay), [
    1000,
    2000,
    4000,
    256000,
    BACKOFF_MAX_MS,
    BACKOFF_MAX_MS,
  ]);
});

t.test('a terminal failure waits until the spec changes', async (t) => {
  const { log, loop, clock } = setup();
  log.failures.set('create stream/1', () => new DriverError('bad device', false));
  await loop.submit(desired([stream(1, 'a')]), 'test');
  clock.advance(3_600_000);
  await new Promise((r) => setImmediate(r));
  await loop.submit(desired([stream(1, 'a')]), 'test');
  t.equal(log.calls.length, 1, 'no retry of the same spec');
  t.notOk(loop.status().resources[0]?.nextRetryAt);
  log.failures.delete('create stream/1');
  const r = await loop.submit(desired([stream(1, 'a', { note: 'fixed' })]), 'test');
  t.equal(r.results[0]?.outcome, 'created');
});

t.test('a failed update keeps the old spec so the next plan shows the update again', async (t) => {
  const { log, loop } = setup();
  await loop.submit(desired([stream(1, 'a')]), 'test');
  log.failures.set('update stream/1', () => new DriverError('nope', false));
  const r = await loop.submit(desired([stream(1, 'a', { note: 'x' })]), 'test');
  t.equal(r.results[0]?.outcome, 'failed');
  t.equal(loop.actual().get('stream/1')?.spec['note'], undefined);
  t.equal(loop.plan(desired([stream(1, 'a', { note: 'x' })])).summary.change, 1);
  t.match(loop.status().resources[0], { state: 'running', error: 'nope' });
});

t.test('submits during an apply coalesce: one more pass with the newest', async (t) => {
  const { log, loop } = setup();
  const g = gate();
  log.gates.set('create stream/1', g.promise);
  const first = loop.submit(desired([stream(1, 'a')]), 'first');
  await new Promise((r) => setImmediate(r));
  const second = loop.submit(desired([stream(1, 'a'), stream(2, 'b')]), 'second');
  const third = loop.submit(desired([stream(1, 'a'), stream(3, 'c')]), 'third');
  g.open();
  const [r1, r2, r3] = await Promise.all([first, second, third]);
  t.equal(r1.origin, 'first');
  t.equal(r2, r3, 'the superseded submit resolves with the newer pass');
  t.equal(r3.origin, 'third');
  t.same(log.calls, ['create stream/1', 'create stream/3']);
  t.equal(loop.status().origin, 'third');
});

t.test('kinds without a driver are pending, never success', async (t) => {
  const { log, loop } = setup({ kinds: ['stream'] });
  const d = desired([stream(1, 'a'), storage(7)]);
  const r = await loop.submit(d, 'test');
  t.same(
    r.results.map((x) => [x.kind, x.outcome]),
    [
      ['stream', 'created'],
      ['storage', 'pending'],
    ],
  );
  const st = loop.status();
  t.match(
    st.resources.find((x) => x.kind === 'storage'),
    {
      state: PENDING_NO_DRIVER,
      outcome: 'pending',
    },
  );
  t.match(st.lastResult, { outcomes: { created: 1, pending: 1 } });
  t.ok(planIsEmpty(loop.plan(d)), 'accepted: planning again shows no changes');
  t.same(log.calls, ['create stream/1']);
});

t.test('a fixed-field change is refused and nothing runs differently', async (t) => {
  const { log, loop } = setup();
  await loop.submit(desired([storage(7), stream(1, 'a')]), 'good');
  log.calls.length = 0;
  const moved = res({ kind: 'storage', key: '7', spec: { id: 7, name: 's7', 'dir-path': '/x' } });
  const r = await loop.submit(desired([moved, stream(1, 'a', { note: 'n' })]), 'bad');
  t.equal(r.refused, true);
  t.equal(r.errors[0]?.rule, 'fixed');
  t.same(log.calls, [], 'no driver touched, not even for the valid part');
  const st = loop.status();
  t.equal(st.origin, 'good');
  t.match(st.lastError, { origin: 'bad', issues: [{ rule: 'fixed' }] });
  await loop.submit(desired([storage(7), stream(1, 'a')]), 'good again');
  t.notOk(loop.status().lastError, 'a good config clears the error');
});

t.test('reportInvalid shows the error and leaves the running state alone', async (t) => {
  const { loop } = setup();
  await loop.submit(desired([stream(1, 'a')]), 'good');
  loop.reportInvalid('file', [
    { severity: 'error', pointer: '/stream/0/id', rule: 'type', message: 'must be integer' },
  ]);
  const st = loop.status();
  t.match(st.lastError, { origin: 'file', issues: [{ rule: 'type' }] });
  t.equal(st.origin, 'good');
  t.equal(loop.instances('stream').length, 1);
});

t.test('the state file keeps the last applied specs', async (t) => {
  const dir = mkdtempSync(join(tmpdir(), 'sluice-state-'));
  t.teardown(() => rmSync(dir, { recursive: true, force: true }));
  const file = join(dir, 'state.json');
  t.same(loadStateFile(file), new Map(), 'absent file: nothing applied');
  const { loop } = setup({ stateFile: file });
  const d = desired([stream(1, 'a'), storage(7)]);
  await loop.submit(d, 'test');
  const loaded = loadStateFile(file);
  t.same([...loaded.keys()], ['stream/1', 'storage/7']);
  t.same(loaded.get('stream/1')?.spec, stream(1, 'a').spec);
  const { plan } = await import('../../src/reconciler/plan.ts');
  t.ok(planIsEmpty(plan(d, loaded, fakeRules)), 'diffing against the file shows no changes');
});

t.test('drivers see running dependencies through host.lookup', async (t) => {
  const registry = new DriverRegistry();
  const log: CallLog = newCallLog();
  registry.register(fakeDriver('storage', log));
  let seen: unknown;
  registry.register({
    kind: 'stream',
    async create(_res, host) {
      seen = host.lookup('storage', '7');
      return { update: async () => {}, close: async () => {}, status: () => ({ state: 'ok' }) };
    },
  });
  const clock = new ManualClock(0);
  const loop = new ReconcileLoop({
    registry,
    rules: fakeRules,
    host: createHost({ log: silentLogger, clock, dataDir: '/x' }),
    log: silentLogger,
  });
  await loop.submit(desired([stream(1, 'a', {}, [ref('storage', '7')]), storage(7)]), 't');
  t.ok(seen, 'the storage instance was running before the stream was created');
  t.equal(seen, loop.instances('storage')[0]?.instance);
});

t.test('the log line of a refused config says why', async (t) => {
  const lines: Array<Record<string, unknown>> = [];
  const log = pino({ level: 'error' }, { write: (s: string) => lines.push(JSON.parse(s)) });
  const clock = new ManualClock(0);
  const host = createHost({ log, clock, dataDir: '/nonexistent' });
  const loop = new ReconcileLoop({ registry: new DriverRegistry(), rules: fakeRules, host, log });
  loop.reportInvalid('file', [
    { severity: 'error', pointer: '/a', rule: 'type', message: 'a must be an integer' },
    { severity: 'error', pointer: '/b', rule: 'type', message: 'b must be an integer' },
  ]);
  t.match(lines, [
    { origin: 'file', msg: 'configuration refused: a must be an integer (and 1 more)' },
  ]);
  t.equal((lines[0]!['issues'] as unknown[]).length, 2, 'every issue is in the record');
});
