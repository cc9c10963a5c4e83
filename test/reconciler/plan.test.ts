// Table-driven tests of the pure planner: actions, field paths, restart scopes, replace,
// fixed refusal, secrets and unchanged counts.
import t from 'tap';
import type { Resource } from '../../src/config/types.ts';
import { plan, planIsEmpty } from '../../src/reconciler/plan.ts';
import type { ResourceChange } from '../../src/reconciler/types.ts';
import { actualOf, desired, fakeRules, res, stream } from '../helpers/desired.ts';

const udp = (port: number, extra: Record<string, unknown> = {}) => ({
  type: 'udp',
  address: '239.1.1.1',
  port,
  ...extra,
});

function only(changes: ResourceChange[]): ResourceChange {
  const shown = changes.filter((c) => c.action !== 'unchanged');
  if (shown.length !== 1) throw new Error(`expected one change, got ${shown.length}`);
  return shown[0]!;
}

const cases: Array<{
  name: string;
  before: Resource[];
  after: Resource[];
  action: ResourceChange['action'];
  fields: Array<Partial<ResourceChange['fields'][number]>>;
  forcesReplace?: string[];
  unchanged?: number;
}> = [
  {
    name: 'create lists every set field',
    before: [],
    after: [stream(1, 'news', { input: [udp(5000)] })],
    action: 'create',
    fields: [
      { path: 'id', after: 1 },
      { path: 'mpts', after: false },
      { path: 'stream-name', after: 'news' },
      { path: 'pause', after: true },
      { path: 'stream-timeout', after: 30000000 },
      { path: 'enable-alert', after: true },
      { path: 'input[0].type', after: 'udp' },
      { path: 'input[0].address', after: '239.1.1.1' },
      { path: 'input[0].port', after: 5000 },
    ],
  },
  {
    name: 'destroy lists every field as before',
    before: [res({ kind: 'user', key: 'bob', spec: { login: 'bob', role: 'viewer' } })],
    after: [],
    action: 'destroy',
    fields: [
      { path: 'login', before: 'bob' },
      { path: 'role', before: 'viewer' },
    ],
  },
  {
    name: 'hot field updates in place without scope',
    before: [stream(3, 'news')],
    after: [stream(3, 'news', { 'stream-timeout': 5000000 })],
    action: 'update',
    fields: [{ path: 'stream-timeout', before: 30000000, after: 5000000, apply: 'hot' }],
    unchanged: 5,
  },
  {
    name: 'change inside input[1] restarts input[1]',
    before: [stream(3, 'news', { input: [udp(5000), udp(5001)] })],
    after: [stream(3, 'news', { input: [udp(5000), udp(6001, { address: '239.2.2.2' })] })],
    action: 'update',
    fields: [
      { path: 'input[1].address', apply: 'restart', scope: 'input[1]' },
      { path: 'input[1].port', before: 5001, after: 6001, apply: 'restart', scope: 'input[1]' },
    ],
    unchanged: 6 + 3 + 1,
  },
  {
    name: 'added input is one field restarting its own index',
    before: [stream(3, 'news', { input: [udp(5000), udp(5001)] })],
    after: [stream(3, 'news', { input: [udp(5000), udp(5001), udp(5002)] })],
    action: 'update',
    fields: [{ path: 'input[2]', before: undefined, after: udp(5002), scope: 'input[2]' }],
  },
  {
    name: 'removed output is one field',
    before: [stream(3, 'news', { output: [udp(7000)] })],
    after: [stream(3, 'news')],
    action: 'update',
    fields: [{ path: 'output[0]', before: udp(7000), after: undefined, scope: 'output[0]' }],
  },
  {
    name: 'arrays of scalars compare whole',
    before: [stream(3, 'news', { tag: ['a', 'b'] })],
    after: [stream(3, 'news', { tag: ['a', 'c'] })],
    action: 'update',
    fields: [{ path: 'tag', before: ['a', 'b'], after: ['a', 'c'], apply: 'hot' }],
  },
  {
    name: 'restart field outside records restarts the whole instance',
    before: [stream(3, 'news')],
    after: [stream(3, 'news', { 'stream-type': 1 })],
    action: 'update',
    fields: [{ path: 'stream-type', before: undefined, after: 1, apply: 'restart' }],
  },
  {
    name: 'mpts change forces a replace',
    before: [stream(3, 'news', { 'display-name': 'A' })],
    after: [stream(3, 'news', { mpts: true, 'display-name': 'B' })],
    action: 'replace',
    fields: [
      { path: 'mpts', apply: 'replace' },
      { path: 'display-name', apply: 'hot' },
    ],
    forcesReplace: ['mpts'],
  },
  {
    name: 'member order does not matter',
    before: [res({ kind: 'server', key: 'server', spec: { a: 1, b: { x: 1, y: 2 } } })],
    after: [res({ kind: 'server', key: 'server', spec: { b: { y: 2, x: 1 }, a: 1 } })],
    action: 'unchanged',
    fields: [],
    unchanged: 3,
  },
  {
    name: 'nested objects diff by dotted path',
    before: [res({ kind: 'server', key: 'server', spec: { b: { x: 1, y: 2 } } })],
    after: [res({ kind: 'server', key: 'server', spec: { b: { x: 1, y: 3 } } })],
    action: 'update',
    fields: [{ path: 'b.y', before: 2, after: 3 }],
    unchanged: 1,
  },
];

for (const c of cases) {
  t.test(c.name, async (t) => {
    const p = plan(desired(c.after), actualOf(c.before), fakeRules);
    t.same(p.errors, []);
    const ch = c.action === 'unchanged' ? p.changes[0]! : only(p.changes);
    t.equal(ch.action, c.action);
    t.equal(ch.fields.length, c.fields.length, 'field count');
    for (const [i, f] of c.fields.entries()) t.match(ch.fields[i], f, `field ${f.path}`);
    t.same(ch.forcesReplace, c.forcesReplace ?? []);
    if (c.unchanged !== undefined) t.equal(ch.unchanged, c.unchanged, 'unchanged count');
  });
}

t.test('summary counts and unchanged resources', async (t) => {
  const before = [stream(1, 'a'), stream(2, 'b'), stream(3, 'c'), stream(4, 'd')];
  const after = [
    stream(1, 'a'),
    stream(2, 'b', { note: 'x' }),
    stream(3, 'c', { mpts: true }),
    stream(5, 'e'),
    stream(6, 'f'),
  ];
  const p = plan(desired(after), actualOf(before), fakeRules);
  t.same(p.summary, { add: 2, change: 1, replace: 1, destroy: 1 });
  t.same(
    p.changes.map((c) => [c.key, c.action]),
    [
      ['1', 'unchanged'],
      ['2', 'update'],
      ['3', 'replace'],
      ['5', 'create'],
      ['6', 'create'],
      ['4', 'destroy'],
    ],
  );
  t.notOk(planIsEmpty(p));
  t.ok(planIsEmpty(plan(desired(before), actualOf(before), fakeRules)));
});

t.test('a changed fixed field makes the plan fail with a clear reason', async (t) => {
  const st = (dir: string) =>
    res({
      kind: 'storage',
      key: '1',
      name: 'main',
      pointer: '/dvr-storage-list/storage/0',
      spec: { id: 1, name: 'main', 'dir-path': dir, 'max-usage': 90 },
    });
  const p = plan(desired([st('/mnt/b')]), actualOf([st('/mnt/a')]), fakeRules);
  t.equal(p.errors.length, 1);
  t.match(p.errors[0], {
    severity: 'error',
    rule: 'fixed',
    pointer: '/dvr-storage-list/storage/0/dir-path',
    message:
      'storage "main" (id 1): dir-path cannot change after creation (/mnt/a → /mnt/b); ' +
      'remove the record and add one with a new id',
  });
  t.notOk(planIsEmpty(p));
});

t.test('secrets are flagged, also inside added records', async (t) => {
  const before = [
    res({ kind: 'user', key: 'bob', spec: { login: 'bob', password: 'x', role: 'viewer' } }),
    stream(1, 'a'),
  ];
  const after = [
    res({ kind: 'user', key: 'bob', spec: { login: 'bob', password: 'y', role: 'viewer' } }),
    stream(1, 'a', { input: [{ type: 'srt', port: 9000, passphrase: 'hunter22' }] }),
  ];
  const p = plan(desired(after), actualOf(before), fakeRules);
  const user = p.changes.find((c) => c.kind === 'user')!;
  t.match(user.fields, [{ path: 'password', secret: true }]);
  const s = p.changes.find((c) => c.kind === 'stream')!;
  t.match(s.fields, [{ path: 'input[0]', secretPaths: ['passphrase'] }]);
  t.notOk(s.fields[0]!.secret, 'the rest of the record stays visible');
});

t.test('writing a default explicitly on both sides is no change', async (t) => {
  const p = plan(desired([stream(1, 'a', { pause: true })]), actualOf([stream(1, 'a')]), fakeRules);
  t.equal(p.changes[0]!.action, 'unchanged');
  t.equal(p.changes[0]!.unchanged, 6);
});

t.test('plan is pure: inputs are not modified', async (t) => {
  const before = [stream(1, 'a', { input: [udp(1)] })];
  const after = [stream(1, 'a', { input: [udp(2)] })];
  const d = desired(after);
  const a = actualOf(before);
  const snap = JSON.stringify([[...d.resources], [...a]]);
  plan(d, a, fakeRules);
  t.equal(JSON.stringify([[...d.resources], [...a]]), snap);
});
