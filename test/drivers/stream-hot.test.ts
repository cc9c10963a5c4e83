// The stream driver obeys the plan: every `x-apply: hot` field of the stream schema has an
// effect in src/drivers/stream/hot.ts, and an update's restarts come from the plan's changes.
import { readFileSync } from 'node:fs';
import t from 'tap';
import { SCHEMA_DIR } from '../../src/config/schema.ts';
import { readUpdate, STREAM_HOT_EFFECTS, topField } from '../../src/drivers/stream/hot.ts';
import type { FieldChange } from '../../src/reconciler/types.ts';

const schema = JSON.parse(readFileSync(`${SCHEMA_DIR}stream.schema.json`, 'utf8')) as {
  properties: Record<string, { 'x-apply'?: string }>;
};
const hot = Object.entries(schema.properties)
  .filter(([, p]) => p['x-apply'] === 'hot')
  .map(([k]) => k);

t.test('every hot field of the stream schema has an effect, and nothing else does', async (t) => {
  t.ok(hot.length > 10, `${hot.length} hot fields in the schema`);
  for (const f of hot) t.ok(STREAM_HOT_EFFECTS[f], `hot field ${f} has an effect`);
  for (const f of Object.keys(STREAM_HOT_EFFECTS)) {
    t.ok(hot.includes(f), `${f} in the table is a hot field of the schema`);
  }
});

const change = (path: string, apply: FieldChange['apply'], scope?: string): FieldChange => ({
  path,
  before: 1,
  after: 2,
  apply,
  ...(scope ? { scope } : {}),
});

t.test('an update is read from the plan alone', async (t) => {
  const cases: [string, FieldChange[], Partial<ReturnType<typeof readUpdate>>][] = [
    ['nothing', [], { whole: false, inputs: [], outputs: [] }],
    [
      'check-interval and epg-export are hot: no restart',
      [change('check-interval', 'hot'), change('epg-export', 'hot')],
      { whole: false, inputs: [], outputs: [] },
    ],
    [
      'one input field restarts that input',
      [change('input[1].port', 'restart', 'input[1]')],
      { whole: false, inputs: [1], outputs: [] },
    ],
    [
      'an output added restarts that output',
      [change('output[2]', 'restart', 'output[2]')],
      { whole: false, inputs: [], outputs: [2] },
    ],
    [
      'inputs in order, each once',
      [
        change('input[3].port', 'restart', 'input[3]'),
        change('input[0].address', 'restart', 'input[0]'),
        change('input[3].type', 'restart', 'input[3]'),
      ],
      { whole: false, inputs: [0, 3] },
    ],
    [
      'an unscoped restart restarts the whole stream',
      [change('bitrate-mode', 'restart'), change('input[0].port', 'restart', 'input[0]')],
      { whole: true },
    ],
    [
      'a hot field not in the table restarts the whole stream',
      [change('x-new', 'hot')],
      { whole: true, unknownHot: ['x-new'] },
    ],
  ];
  for (const [name, changes, want] of cases) {
    const got = readUpdate(changes);
    for (const [k, v] of Object.entries(want))
      t.same(got[k as keyof typeof got], v, `${name}: ${k}`);
  }
  const u = readUpdate([
    change('alert-delay', 'hot'),
    change('dvr-hours', 'hot'),
    change('pause', 'hot'),
  ]);
  t.same([...u.effects].sort(), ['alerts', 'archive', 'pause']);
  t.equal(topField('input[1].port'), 'input');
  t.equal(topField('dvr-hours'), 'dvr-hours');
});
