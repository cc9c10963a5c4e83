// Acceptance through the real config loader and schema rules: apply then plan again shows no
// changes; a change to one of 1,000 streams touches that instance only; a change inside one
// input carries that input's restart scope; mpts forces a replace; dir-path is refused.
import t from 'tap';
import { loadConfigText } from '../../src/config/parse.ts';
import { fieldRules } from '../../src/config/schema.ts';
import { RECORD_KINDS, SINGLETON_KINDS } from '../../src/config/types.ts';
import { silentLogger } from '../../src/log.ts';
import { DriverRegistry } from '../../src/reconciler/driver-registry.ts';
import { createHost } from '../../src/reconciler/host.ts';
import { ReconcileLoop } from '../../src/reconciler/loop.ts';
import { planIsEmpty } from '../../src/reconciler/plan.ts';
import { renderPlanText } from '../../src/reconciler/render.ts';
import { ManualClock } from '../../src/util/clock.ts';
import { fakeDriver, newCallLog } from '../helpers/fake-driver.ts';

const VERSION = '2.0.2.361';

function streams(n: number, edit: (s: Record<string, unknown>, i: number) => void = () => {}) {
  return Array.from({ length: n }, (_, k) => {
    const i = k + 1;
    const s: Record<string, unknown> = {
      id: i,
      'stream-name': `ch${i}`,
      input: [
        { type: 'udp', address: '239.1.1.1', port: 5000 + (i % 1000) },
        { type: 'udp', address: '239.1.1.2', port: 6000 + (i % 1000) },
      ],
    };
    edit(s, i);
    return s;
  });
}

function load(doc: Record<string, unknown>) {
  return loadConfigText(JSON.stringify({ 'x-svc-version': VERSION, ...doc }), { source: 'test' });
}

function setup() {
  const log = newCallLog();
  const registry = new DriverRegistry();
  for (const k of [...SINGLETON_KINDS, ...RECORD_KINDS]) registry.register(fakeDriver(k, log));
  const clock = new ManualClock(0);
  const loop = new ReconcileLoop({
    registry,
    rules: fieldRules,
    host: createHost({ log: silentLogger, clock, dataDir: '/x' }),
    log: silentLogger,
  });
  return { log, loop };
}

t.test(
  'apply then plan again: no changes; one stream of 1,000 changed touches one instance',
  async (t) => {
    const { log, loop } = setup();
    const base = {
      user: [{ login: 'ann', password: 'secret-pw', role: 'admin' }],
      'dvr-storage-list': { storage: [{ id: 1, name: 'main', 'dir-path': '/srv/dvr' }] },
      stream: streams(1000),
    };
    const first = load(base);
    const r = await loop.submit(first.desired, 'test');
    t.equal(r.refused, false);
    t.notOk(r.results.some((x) => x.outcome === 'failed'));
    const p = loop.plan(load(base).desired);
    t.ok(planIsEmpty(p), 'a freshly loaded equal config plans to nothing');
    t.match(renderPlanText(p), /^No changes\./);

    log.calls.length = 0;
    const changed = load({
      ...base,
      stream: streams(1000, (s, i) => {
        if (i === 500) s['stream-timeout'] = 5_000_000;
      }),
    });
    await loop.submit(changed.desired, 'test');
    t.same(log.calls, ['update stream/500']);
    t.ok(planIsEmpty(loop.plan(changed.desired)));
  },
);

t.test('input change restarts that input; mpts replaces; dir-path is refused', async (t) => {
  const { log, loop } = setup();
  const base = {
    'dvr-storage-list': { storage: [{ id: 1, name: 'main', 'dir-path': '/srv/dvr' }] },
    stream: streams(3),
  };
  await loop.submit(load(base).desired, 'test');

  const input = load({
    ...base,
    stream: streams(3, (s, i) => {
      if (i === 2) (s['input'] as Array<Record<string, unknown>>)[1]!['port'] = 7777;
    }),
  });
  const p = loop.plan(input.desired);
  const ch = p.changes.find((c) => c.action !== 'unchanged')!;
  t.match(ch, { kind: 'stream', key: '2', action: 'update' });
  t.match(ch.fields, [{ path: 'input[1].port', after: 7777, apply: 'restart', scope: 'input[1]' }]);

  const mpts = load({
    ...base,
    stream: streams(3, (s, i) => {
      if (i === 3) s['mpts'] = true;
    }),
  });
  const pm = loop.plan(mpts.desired);
  t.match(
    pm.changes.find((c) => c.key === '3'),
    { action: 'replace', forcesReplace: ['mpts'] },
  );

  const moved = load({
    ...base,
    'dvr-storage-list': { storage: [{ id: 1, name: 'main', 'dir-path': '/srv/other' }] },
  });
  log.calls.length = 0;
  const r = await loop.submit(moved.desired, 'test');
  t.equal(r.refused, true);
  t.match(r.errors, [{ rule: 'fixed', message: /dir-path cannot change after creation/ }]);
  t.same(log.calls, [], 'the running state did not change');
});
