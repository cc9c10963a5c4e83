// The spec readers: the value when it has the type, the fallback otherwise.
import t from 'tap';
import { bool, int, num, str, strList } from '../../src/config/spec-values.ts';

const spec = { n: 2.5, i: 3, s: 'x', b: false, inf: Infinity, list: ['a', 1, 'b'], nul: null };

t.test('each reader takes its type and falls back on anything else', async (t) => {
  const cases: [string, unknown, unknown][] = [
    ['num n', num(spec, 'n', 9), 2.5],
    ['num inf', num(spec, 'inf', 9), 9],
    ['num s', num(spec, 's', 9), 9],
    ['int i', int(spec, 'i', 9), 3],
    ['int n', int(spec, 'n', 9), 9],
    ['str s', str(spec, 's'), 'x'],
    ['str absent', str(spec, 'absent'), ''],
    ['str nul', str(spec, 'nul', 'd'), 'd'],
    ['bool b', bool(spec, 'b', true), false],
    ['bool i', bool(spec, 'i', true), true],
    ['strList list', strList(spec, 'list'), ['a', 'b']],
    ['strList s', strList(spec, 's'), []],
  ];
  for (const [name, got, want] of cases) t.same(got, want, name);
});
