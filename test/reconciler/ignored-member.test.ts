// The planner leaves out members the schema does not know (the config warns they are ignored):
// a change to one, at any depth, is no change; real schema rules, real config loader.
import t from 'tap';
import { fieldRules } from '../../src/config/schema.ts';
import { loadConfigText } from '../../src/config/store.ts';
import { plan, planIsEmpty } from '../../src/reconciler/plan.ts';

type Doc = Record<string, unknown>;

const base = (): Doc => ({
  stream: [
    {
      id: 1,
      'stream-name': 'news',
      input: [{ type: 'udp', address: '239.1.1.1', port: 5000 }],
      output: [{ type: 'udp', address: '239.2.2.2', port: 6000 }],
    },
  ],
  'epg-server': { port: 10444 },
});

const load = (doc: Doc) => loadConfigText(JSON.stringify(doc), { source: 'test' });

function planBetween(before: Doc, after: Doc) {
  const running = load(before).desired.resources;
  return plan(load(after).desired, running, fieldRules);
}

const cases: Array<{ name: string; edit: (d: Doc, v: unknown) => void; warning: string }> = [
  {
    name: 'a stream member',
    edit: (d, v) => {
      (d['stream'] as Doc[])[0]!['notee'] = v;
    },
    warning: 'unknown member "notee" is ignored (did you mean note?)',
  },
  {
    name: 'an input member (nested record)',
    edit: (d, v) => {
      ((d['stream'] as Doc[])[0]!['input'] as Doc[])[0]!['portt'] = v;
    },
    warning: 'unknown member "portt" is ignored (did you mean port?)',
  },
  {
    name: 'an output member holding an object',
    edit: (d, v) => {
      ((d['stream'] as Doc[])[0]!['output'] as Doc[])[0]!['adress'] = { a: [v] };
    },
    warning: 'unknown member "adress" is ignored (did you mean address?)',
  },
  {
    name: 'a member of a top-level object',
    edit: (d, v) => {
      (d['epg-server'] as Doc)['portt'] = v;
    },
    warning: 'unknown member "portt" is ignored (did you mean port?)',
  },
];

for (const c of cases) {
  t.test(`${c.name}: added, changed and removed, the plan is empty`, async (t) => {
    const plain = base();
    const once = base();
    c.edit(once, 1);
    t.match(
      load(once).warnings.map((w) => w.message),
      [c.warning],
      'the config warns with a did-you-mean',
    );
    const added = planBetween(plain, once);
    t.ok(planIsEmpty(added), `adding it plans nothing: ${JSON.stringify(added.summary)}`);
    t.ok(planIsEmpty(planBetween(once, plain)), 'removing it plans nothing');
    const changed = base();
    c.edit(changed, 2);
    t.ok(planIsEmpty(planBetween(once, changed)), 'changing its value plans nothing');
  });
}

t.test('a known member changed beside an ignored one: only the known one is planned', async (t) => {
  const before = base();
  const after = base();
  const s = (after['stream'] as Doc[])[0]!;
  s['notee'] = 'x';
  (s['input'] as Doc[])[0]!['port'] = 5002;
  const p = planBetween(before, after);
  const ch = p.changes.find((c) => c.action !== 'unchanged');
  t.same(
    ch?.fields.map((f) => f.path),
    ['input[0].port'],
  );
});

t.test('a new record does not list its ignored members as created', async (t) => {
  const doc = base();
  (doc['stream'] as Doc[])[0]!['notee'] = 'x';
  const p = plan(load(doc).desired, new Map(), fieldRules);
  const paths = p.changes.flatMap((c) => c.fields.map((f) => f.path));
  t.ok(paths.includes('stream-name'), 'known members are listed');
  t.notOk(paths.includes('notee'), 'the ignored one is not');
});
