// The streams page colours the TR 101 290 errors of the last minute, not the totals: a stream
// that had errors once reads clean again a minute later (the feed's p1m / p2m / ccm).
import t from 'tap';
import { ManualClock } from '../../src/util/clock.ts';
import { type FeedDelta, StreamFeed } from '../../src/web/feed.ts';
import type { StreamRow } from '../../src/web/rows.ts';

const row = (o: Partial<StreamRow>): StreamRow => ({
  key: '1',
  id: 1,
  name: 'a',
  title: '',
  state: 'running',
  active: 0,
  inputs: 2,
  in: 1000,
  out: 1000,
  p1: 0,
  p2: 0,
  cc: 0,
  switches: 0,
  tags: [],
  ...o,
});

t.test('errors count in the last minute, then read 0 while the totals stay', async (t) => {
  const clock = new ManualClock();
  let now = row({});
  const feed = new StreamFeed({ clock, rows: () => [now] });
  const last: Partial<StreamRow> = {};
  feed.subscribe((d: FeedDelta) => Object.assign(last, ...d.changed));
  feed.start();
  now = row({ p1: 2, p2: 5, cc: 1 });
  clock.advance(1000);
  t.match(last, { p1: 2, p1m: 2, p2m: 5, ccm: 1 }, 'new errors show at once');
  clock.advance(30_000);
  t.match(feed.snapshot().rows[0], { p1: 2, p1m: 2 }, 'still within the minute');
  clock.advance(31_000);
  t.match(last, { p1: 2, p1m: 0, p2m: 0, ccm: 0 }, 'a minute later: clean, the totals kept');
  now = row({ p1: 3, p2: 5, cc: 1 });
  clock.advance(1000);
  t.match(last, { p1: 3, p1m: 1 }, 'one more error counts again');
  now = row({ active: 1, p1: 7 });
  clock.advance(1000);
  t.match(last, { p1: 7, p1m: 0 }, "a switch to the backup does not count that input's old totals");
  now = row({ active: 1, p1: 1 });
  clock.advance(1000);
  t.match(last, { p1: 1, p1m: 1 }, 'a total that went down (input restarted) counts afresh');
  feed.close();
});
