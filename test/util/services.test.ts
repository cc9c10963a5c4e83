// Typed service keys: a lookup returns the key's type, two maps stay apart, and keys with
// the same name address the same entry.
import t from 'tap';
import { ServiceKey, Services } from '../../src/util/services.ts';

const COUNTER = new ServiceKey<{ n: number }>('counter');

t.test('get returns what set stored, typed by the key', async (t) => {
  const a = new Services();
  const b = new Services();
  t.equal(a.get(COUNTER), undefined, 'absent');
  a.set(COUNTER, { n: 1 });
  const n: number | undefined = a.get(COUNTER)?.n;
  t.equal(n, 1);
  t.equal(b.get(COUNTER), undefined, 'another map holds its own');
  t.equal(a.get(new ServiceKey<{ n: number }>('counter'))?.n, 1, 'keyed by name');
  t.ok(a.delete(COUNTER));
  t.equal(a.get(COUNTER), undefined, 'deleted');
});
