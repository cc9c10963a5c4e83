// Retention on an injected clock: at each UTC midnight the day that leaves the window
// (retention-days-back) loses its rows, the JSON caches are flushed and the XMLTV counter moves;
// days still inside stay untouched.
import Fastify from 'fastify';
import t from 'tap';
import { epgRoutes } from '../../src/api/routes/epg.ts';
import { SECONDS_PER_DAY } from '../../src/epg/runtime.ts';
import { epgTestBed, FIXTURE_DAY } from '../helpers/epg-host.ts';

const D = FIXTURE_DAY;
const H = 3600;
const MS_PER_DAY = SECONDS_PER_DAY * 1000;

t.test('a day leaving the window is pruned and flushes the caches', async (t) => {
  const bed = epgTestBed(t, D + 6 * H);
  bed.rt.settings = { ...bed.rt.settings, retentionDaysBack: 2 };
  const db = bed.rt.openSource(1).db;
  for (const day of [0, 1, 2]) {
    db.addEvent('c1', D + day * SECONDS_PER_DAY + 10 * H, D + day * SECONDS_PER_DAY + 11 * H, [
      { lang: 1, title: `day ${day}`, desc: '' },
    ]);
  }
  // one that spans the boundary into day 1: it ends inside the window, so it stays
  db.addEvent('c1', D + 23 * H, D + SECONDS_PER_DAY + H, [{ lang: 1, title: 'late', desc: '' }]);
  const app = Fastify();
  await app.register(epgRoutes, { epg: () => bed.rt });
  t.teardown(() => app.close());
  const titles = async (day: number) =>
    (
      JSON.parse(
        (await app.inject(`/data/epg/channel?src=1&ch=c1&t=${D + day * SECONDS_PER_DAY}`)).body,
      ).event as { title: string }[]
    ).map((e) => e.title);
  t.same(await titles(0), ['day 0', 'late']);
  const store = bed.rt.source(1)!;
  t.equal(store.cache.size, 1);

  // to the midnight that starts day 2: day 0 is still "2 days back"
  bed.clock.advance(2 * MS_PER_DAY - 6 * H * 1000);
  t.equal(store.cache.size, 0, 'each midnight flushes the cache');
  t.same(await titles(0), ['day 0', 'late'], 'day 0 still inside the window');

  // the midnight that starts day 3: day 0 leaves
  const counter = bed.rt.counter;
  bed.clock.advance(MS_PER_DAY);
  t.equal(store.cache.size, 0, 'flushed by the day leaving the window');
  t.ok(bed.rt.counter > counter, 'XMLTV counter bumped');
  t.same(await titles(0), ['late'], 'day 0 rows pruned; the event ending in day 1 stays');
  t.same(await titles(1), ['day 1']);
  t.same(await titles(2), ['day 2']);
  t.equal(db.counts().events, 3);
});
