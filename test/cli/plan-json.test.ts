// A plan that travels as JSON (the server's answer to `reconcile --plan`) must render exactly
// like the same plan rendered locally: masked secrets bare, removed members as `-` lines.
import t from 'tap';
import { planFromJson } from '../../src/cli/plan-file.ts';
import { fieldRules, loadConfigText } from '../../src/config/store.ts';
import { plan } from '../../src/reconciler/plan.ts';
import { planToJson, renderPlanText } from '../../src/reconciler/render.ts';

const before = {
  stream: [
    {
      id: 1,
      'stream-name': 'a',
      input: [
        { type: 'srt', port: 9000, passphrase: 'first-secret' },
        { type: 'rtsp', uri: 'rtsp://127.0.0.1/x', 'rtsp-password': 'pw1' },
      ],
    },
    { id: 2, 'stream-name': 'b' },
  ],
  'dvb-adapter': [
    {
      id: 1,
      name: 's',
      type: 5,
      'lnb-polarization': 0,
      'biss-pnr': [101],
      'biss-key': ['0123456789ab'],
    },
  ],
};
type Rec = Record<string, unknown>;
const after = structuredClone(before) as unknown as {
  stream: Array<Rec & { input: Rec[] }>;
  'dvb-adapter': Rec[];
};
const inputs = after.stream[0]!.input;
inputs[0]!['passphrase'] = 'second-secret';
inputs[1]!['rtsp-password'] = 'pw2';
inputs.push({ type: 'srt', port: 9001, passphrase: 'third-one!' });
after.stream[1]!['mpts'] = true;
after['dvb-adapter'][0]!['biss-key'] = ['ba9876543210'];

t.test('server plan JSON renders like the local plan', async (t) => {
  const actual = loadConfigText(JSON.stringify(before)).desired.resources;
  const p = plan(loadConfigText(JSON.stringify(after)).desired, actual, fieldRules);
  const local = renderPlanText(p);
  const viaJson = renderPlanText(planFromJson(JSON.parse(JSON.stringify(planToJson(p)))));
  t.equal(viaJson, local);
  t.notMatch(viaJson, /"\(sensitive\)"\s→/, 'a masked value is not shown as a quoted string');
  t.notMatch(viaJson, /→ null/, 'a member that goes away is a - line, not "→ null"');
  t.match(viaJson, /~ input\[0\]\.passphrase: \(sensitive\) → \(sensitive\)/);
  t.match(viaJson, /- stream-type: 0/);
  for (const secret of [
    'first-secret',
    'second-secret',
    'third-one!',
    'pw1',
    'pw2',
    '0123456789ab',
  ])
    t.notMatch(viaJson, secret, `${secret} is masked`);
});
