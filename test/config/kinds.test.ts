// The table of resource kinds against the schema: every top-level member is a kind, every
// kind's schema resolves, and every `x-ref` annotation names a record kind errors can word.
import { readdirSync, readFileSync } from 'node:fs';
import t from 'tap';
import { RECORD_DEFS, recordDef, SINGLETON_KINDS } from '../../src/config/kinds.ts';
import { refsOf } from '../../src/config/refs.ts';
import { kindSchema, rootSchema } from '../../src/config/schema.ts';

const DIR = new URL('../../schemas/', import.meta.url);
/** Members of the root that are not resources. */
const NOT_KINDS = new Set(['$schema', 'x-svc-version']);

t.test('every top-level member of the config is a singleton or holds a record list', async (t) => {
  const tops = new Set<string>([...SINGLETON_KINDS, ...RECORD_DEFS.map((d) => d.path[0])]);
  for (const name of Object.keys(rootSchema()['properties'])) {
    if (!NOT_KINDS.has(name)) t.ok(tops.has(name), `${name} is in src/config/kinds.ts`);
  }
  for (const d of RECORD_DEFS) t.ok(kindSchema(d.kind)['properties'], `${d.kind} schema`);
  t.same(
    [...RECORD_DEFS.map((d) => d.listedAt)].sort((a, b) => a - b),
    RECORD_DEFS.map((_, i) => i),
    'listedAt is a permutation',
  );
});

t.test('every x-ref names a record kind with a place to point into', async (t) => {
  const kinds: string[] = [];
  const visit = (node: unknown, where: string): void => {
    if (node === null || typeof node !== 'object') return;
    for (const [k, v] of Object.entries(node)) {
      if (k !== 'x-ref') visit(v, `${where}/${k}`);
      else {
        // A kind name, a rule `{ kind, … }`, or `{ by, <value>: kind or rule }`.
        const { by, ...cases } = v as Record<string, unknown>;
        const rules = by === undefined ? [v] : Object.values(cases);
        for (const rule of rules) {
          kinds.push(
            `${where}:${typeof rule === 'string' ? rule : (rule as { kind: string }).kind}`,
          );
        }
      }
    }
  };
  for (const name of readdirSync(DIR)) {
    visit(JSON.parse(readFileSync(new URL(name, DIR), 'utf8')), name);
  }
  t.ok(kinds.length >= 8, 'annotations found');
  for (const entry of kinds) {
    const kind = entry.split(':').pop()!;
    t.ok(recordDef(kind)?.where, `${entry}: a record kind with \`where\``);
  }
});

t.test('refsOf follows the selector member and array items', async (t) => {
  const stream = {
    'dvr-storage': 2,
    'epg-channel-set': [4, 5],
    input: [
      { type: 'demuxer', 'mpts-id': 7 },
      { type: 'demuxer', src: 1, 'mpts-id': 8 },
      { type: 'dvb', 'adapter-id': 9 },
      { type: 'udp', 'adapter-id': 10 },
    ],
  };
  const found = refsOf('stream', stream, '/stream/0').map(
    (r) => `${r.pointer} ${r.member} ${r.rule.kind}`,
  );
  t.same(found.sort(), [
    '/stream/0/dvr-storage dvr-storage storage',
    '/stream/0/epg-channel-set/0 epg-channel-set item epg-channel-set',
    '/stream/0/epg-channel-set/1 epg-channel-set item epg-channel-set',
    '/stream/0/input/0/mpts-id mpts-id stream',
    '/stream/0/input/1/mpts-id mpts-id dvb-adapter',
    '/stream/0/input/2/adapter-id adapter-id dvb-adapter',
  ]);
  t.same(
    refsOf('stream', { input: [{ type: 'demuxer', src: 2, 'mpts-id': 7 }] }, ''),
    [],
    'a src no rule names refers to nothing',
  );
});
