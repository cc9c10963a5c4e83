import t from 'tap';
import { ManualClock } from '../src/util/clock.ts';

t.test('manual clock fires timers in order', async (t) => {
  const c = new ManualClock(0);
  const seen: number[] = [];
  c.setTimeout(() => seen.push(2), 20);
  c.setTimeout(() => seen.push(1), 10);
  const iv = c.setInterval(() => seen.push(0), 15);
  c.advance(31);
  iv.cancel();
  t.same(seen, [1, 0, 2, 0]);
  t.equal(c.now(), 31);
});
