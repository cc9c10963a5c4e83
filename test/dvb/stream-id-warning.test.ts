// dvb-stream-id on a system without input streams or PLPs (DVB-S, DVB-T): spec 1 accepts it
// there, the tuning leaves it out, so validation warns where it stands; S2 and T2 use it.
import t from 'tap';
import { loadConfigText } from '../../src/config/store.ts';

/** A satellite record needs its polarization, or validation warns about that too. */
const adapter = (rec: Record<string, unknown>) => {
  const pol = rec['type'] === 5 || rec['type'] === 6 ? { 'lnb-polarization': 0 } : {};
  return JSON.stringify({ 'dvb-adapter': [{ id: 1, name: 'tuner', ...pol, ...rec }] });
};
const warningsOf = (rec: Record<string, unknown>) =>
  loadConfigText(adapter(rec)).warnings.filter((w) => w.rule === 'dvb-stream-id-ignored');

const cases = [
  { type: 5, id: 3, warned: true, system: 'DVB-S \\(type 5\\)' },
  { type: 3, id: 0, warned: true, system: 'DVB-T \\(type 3\\)' },
  { type: 6, id: 3, warned: false },
  { type: 16, id: 1, warned: false },
  { type: 5, id: -1, warned: false },
];

for (const c of cases) {
  t.test(`type ${c.type}, dvb-stream-id ${c.id}`, async (t) => {
    const found = warningsOf({ type: c.type, 'dvb-stream-id': c.id });
    if (!c.warned) return t.same(found, [], 'nothing to say');
    t.equal(found.length, 1, 'one warning');
    t.match(found[0], {
      severity: 'warning',
      pointer: '/dvb-adapter/0/dvb-stream-id',
      value: c.id,
      line: 1,
    });
    t.match(found[0]?.message, new RegExp(`is ignored on ${c.system}.*remove it`));
  });
}

t.test('the warning does not make the config invalid', async (t) => {
  const loaded = loadConfigText(adapter({ type: 5, 'dvb-stream-id': 2 }));
  t.equal(loaded.desired.resources.get('dvb-adapter/1')?.spec['dvb-stream-id'], 2);
});
