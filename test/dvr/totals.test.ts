// Archived bytes and seconds are running totals: they match a GROUP BY over the index after
// inserts, duplicates and cleanup, and no full pass over the index runs after a batch.
import t from 'tap';
import { TS_TRACK } from '../../src/dvr/index-db.ts';
import { HOUR_MS } from '../../src/dvr/settings.ts';
import { attach, testStorage } from './helpers.ts';

t.test('running totals follow inserts and deletes without a GROUP BY', async (t) => {
  const { storage, clock } = await testStorage(t);
  const index = storage.index!;
  attach(storage, 'a', 1);
  attach(storage, 'b', 24);
  let passes = 0;
  const full = index.trackTotals.bind(index);
  index.trackTotals = () => {
    passes++;
    return full();
  };
  const start = clock.now() - 2 * HOUR_MS;
  const row = (stream: string, track: string, i: number, bytes: number) => ({
    stream,
    track,
    start_ms: start + i * 2000,
    duration: track === TS_TRACK ? 2 : 1.96,
    bytes,
    path: `${stream}/${track}/${i}`,
    uri: `seg-${i}.ts`,
    disc: 0,
    media_start: 0,
    timescale: 90000,
    init_id: 1,
  });
  for (let i = 0; i < 3000; i++) {
    storage.commit(row('a', TS_TRACK, i, 1000));
    storage.commit(row('a', 'c256', i, 700));
    storage.commit(row('b', 'c256', i, 500 + (i % 3)));
  }
  storage.commit(row('a', TS_TRACK, 5, 1000)); // the same path again: ignored by the index
  storage.flush();
  const same = (what: string) => {
    const want = index.totals();
    const got = storage.totals();
    t.same([...got.keys()].sort(), [...want.keys()].sort(), `${what}: streams`);
    for (const [k, w] of want) {
      const g = got.get(k)!;
      t.equal(g.bytes, w.bytes, `${what}: ${k} bytes`);
      t.equal(g.chunks, w.chunks, `${what}: ${k} chunks`);
      t.ok(Math.abs(g.seconds - w.seconds) < 1e-6, `${what}: ${k} seconds`);
      t.equal(g.first, w.first, `${what}: ${k} first`);
      t.ok(Math.abs(g.last - w.last) < 1e-6, `${what}: ${k} last`);
    }
  };
  t.equal(storage.status()['archived-bytes'], 3000 * 1700 + index.totals().get('b')!.bytes);
  passes = 0;
  same('after inserts');
  // Rolling cleanup: stream a keeps 1 h, so its first hour goes.
  await storage.pass();
  same('after rolling cleanup');
  t.ok(storage.totals().get('a')!.chunks < 3000, 'stream a was trimmed');
  const before = passes;
  storage.status();
  storage.totals();
  t.equal(passes, before, 'no full pass over the index for the figures');
  t.equal(passes, 2, 'only the two reference GROUP BYs of this test ran');
});
