// The dashboard's pure parts: the live feed (rows, deltas, history, the errors of the last
// minute) on a manual clock, the UI path mapping, and the bundled schema's references.
import t from 'tap';
import { ROOT_SCHEMA_ID, schemaFiles } from '../../src/config/schema.ts';
import { ManualClock } from '../../src/util/clock.ts';
import { type FeedDelta, StreamFeed } from '../../src/web/feed.ts';
import { UI_ROUTE_PREFIX, uiRewrite } from '../../src/web/paths.ts';
import { type AdapterRow, rowChange, type StreamRow } from '../../src/web/rows.ts';
import { bundleSchema } from '../../src/web/schema-bundle.ts';

const row = (key: string, o: Partial<StreamRow> = {}): StreamRow => ({
  key,
  id: Number(key),
  name: `s${key}`,
  title: '',
  state: 'running',
  active: 0,
  inputs: 1,
  in: 1000,
  out: 1000,
  p1: 0,
  p2: 0,
  cc: 0,
  switches: 0,
  tags: [],
  ...o,
});

t.test('the feed sends only what changed, once a second, and keeps a short history', async (t) => {
  const clock = new ManualClock();
  let rows = [row('1'), row('2', { state: 'paused', in: 0, out: 0 })];
  const feed = new StreamFeed({ clock, rows: () => rows, historyLength: 3 });
  const got: FeedDelta[] = [];
  feed.subscribe((d) => got.push(d));
  feed.start();
  t.equal(got.length, 1, 'the first sweep sends every row');
  t.equal(got[0]!.changed.length, 2);
  clock.advance(1000);
  t.equal(got.length, 1, 'nothing changed: nothing sent');
  rows = [row('1', { in: 900, switches: 1, active: 1 })];
  clock.advance(1000);
  t.same(got[1]!.changed, [{ key: '1', in: 900, switches: 1, active: 1 }], 'changed fields only');
  t.same(got[1]!.removed, ['2'], 'a stream that went away');
  for (let i = 0; i < 5; i++) clock.advance(1000);
  const snap = feed.snapshot();
  t.same(
    snap.history['1'],
    [
      [900, 900, 900],
      [1000, 1000, 1000],
    ],
    'history is bounded',
  );
  t.same(Object.keys(snap.history), ['1'], 'streams that never carried a bit have no history');
  feed.close();
  clock.advance(5000);
  t.equal(got.length, 2, 'a closed feed is quiet');
});

t.test(
  'a snapshot has the streams created since the last sweep, and tells the others',
  async (t) => {
    const clock = new ManualClock();
    let rows = [row('1')];
    const feed = new StreamFeed({ clock, rows: () => rows, historyLength: 5 });
    feed.start();
    const got: FeedDelta[] = [];
    feed.subscribe((d) => got.push(d));
    rows = [row('1'), row('2')];
    const snap = feed.snapshot();
    t.same(
      snap.rows.map((r) => r.key),
      ['1', '2'],
      'the new stream is in the snapshot at once',
    );
    t.same(
      got.length === 1 ? got[0]!.changed.map((c) => c.key) : got,
      ['2'],
      'the others hear of it',
    );
    t.same(snap.history['1'], [[1000], [1000]], 'no extra sample for a known stream');
    t.same(snap.history['2'], [[1000], [1000]], 'the new one has its first');
    clock.advance(1000);
    t.equal(feed.snapshot().history['1']![0].length, 2, 'the sweep samples as before');
    feed.close();
  },
);

const adapter = (key: string, o: Partial<AdapterRow> = {}): AdapterRow => ({
  key,
  id: Number(key),
  name: `a${key}`,
  type: 3,
  mode: 0,
  state: 'locked',
  lock: true,
  signal: -48,
  snr: 28.1,
  ber: 0,
  unc: 0,
  frequency: 602000,
  intermediate: false,
  scan: '',
  transponders: 0,
  services: 0,
  streams: ['1'],
  ...o,
});

t.test('the tuner adapters ride the same feed: in the snapshot, then what changed', async (t) => {
  const clock = new ManualClock();
  const rows = [row('1')];
  let adapters = [adapter('1'), adapter('2', { mode: 1, state: 'ready', lock: false })];
  const feed = new StreamFeed({ clock, rows: () => rows, adapters: () => adapters });
  feed.start();
  const got: FeedDelta[] = [];
  feed.subscribe((d) => got.push(d));
  t.same(
    feed.snapshot().adapters.map((a) => a.key),
    ['1', '2'],
    'every adapter in the snapshot',
  );
  clock.advance(1000);
  t.equal(got.length, 0, 'nothing changed: nothing sent');
  adapters = [adapter('1', { state: 'no lock', lock: false, message: 'the frontend has no lock' })];
  clock.advance(1000);
  t.same(got[0]!.adapters, {
    changed: [{ key: '1', state: 'no lock', lock: false, message: 'the frontend has no lock' }],
    removed: ['2'],
  });
  t.same(got[0]!.changed, [], 'no stream row with it');
  adapters = [adapter('1', { streams: ['1', '2'] })];
  clock.advance(1000);
  t.same(
    got[1]!.adapters?.changed,
    [{ key: '1', state: 'locked', lock: true, streams: ['1', '2'], message: '' }],
    'lock back, a second reader, the message gone',
  );
  rows.push(row('2'));
  clock.advance(1000);
  t.equal(got[2]!.adapters, undefined, 'a delta of streams only has no adapters');
  feed.close();
});

t.test('a message that goes away is sent as empty', async (t) => {
  t.same(rowChange(row('1', { message: 'x' }), row('1')), { key: '1', message: '' });
  t.equal(rowChange(row('1', { tags: ['a'] }), row('1', { tags: ['a'] })), undefined);
});

t.test('the UI path maps onto the internal routes, nothing else does', async (t) => {
  const cases: [string, string, string | undefined][] = [
    ['/ui/', '/ui/', `${UI_ROUTE_PREFIX}/`],
    ['/ui/index.html', '/ui/', `${UI_ROUTE_PREFIX}/`],
    ['/ui/?x=1', '/ui/', `${UI_ROUTE_PREFIX}/?x=1`],
    ['/ui', '/ui/', `${UI_ROUTE_PREFIX}/redirect`],
    ['/ui/assets/app.js', '/ui/', `${UI_ROUTE_PREFIX}/assets/app.js`],
    ['/ui/index.m3u8', '/ui/', undefined],
    ['/data/status', '/ui/', undefined],
    ['/ops/dash/', '/ops/dash/', `${UI_ROUTE_PREFIX}/`],
    ['/', '/', `${UI_ROUTE_PREFIX}/`],
    ['/assets/app.css', '/', `${UI_ROUTE_PREFIX}/assets/app.css`],
    ['/news/mpegts', '/', undefined],
  ];
  for (const [url, uiPath, want] of cases)
    t.equal(uiRewrite(url, uiPath), want, `${url} at ${uiPath}`);
});

t.test('the bundled schema has every reference inside it', async (t) => {
  const doc = bundleSchema(schemaFiles(), ROOT_SCHEMA_ID);
  const refs: string[] = [];
  const walk = (n: unknown) => {
    if (Array.isArray(n)) n.forEach(walk);
    else if (n && typeof n === 'object') {
      for (const [k, v] of Object.entries(n)) {
        if (k === '$ref' && typeof v === 'string') refs.push(v);
        else walk(v);
      }
    }
  };
  walk(doc);
  t.ok(refs.length > 20, `${refs.length} references`);
  const resolve = (ref: string) =>
    ref
      .slice(2)
      .split('/')
      .filter(Boolean)
      .reduce<unknown>((n, k) => (n as Record<string, unknown> | undefined)?.[k], doc);
  t.same(
    refs.filter((r) => !r.startsWith('#') || resolve(r) === undefined),
    [],
    'no reference points outside or nowhere',
  );
});

// The streams page colours the errors of the last minute, not the totals (p1m / p2m / ccm).
t.test('errors count in the last minute, then read 0 while the totals stay', async (t) => {
  const clock = new ManualClock();
  let now = row('1', { inputs: 2 });
  const feed = new StreamFeed({ clock, rows: () => [now] });
  const last: Partial<StreamRow> = {};
  feed.subscribe((d: FeedDelta) => Object.assign(last, ...d.changed));
  feed.start();
  now = row('1', { inputs: 2, p1: 2, p2: 5, cc: 1 });
  clock.advance(1000);
  t.match(last, { p1: 2, p1m: 2, p2m: 5, ccm: 1 }, 'new errors show at once');
  clock.advance(30_000);
  t.match(feed.snapshot().rows[0], { p1: 2, p1m: 2 }, 'still within the minute');
  clock.advance(31_000);
  t.match(last, { p1: 2, p1m: 0, p2m: 0, ccm: 0 }, 'a minute later: clean, the totals kept');
  now = row('1', { inputs: 2, p1: 3, p2: 5, cc: 1 });
  clock.advance(1000);
  t.match(last, { p1: 3, p1m: 1 }, 'one more error counts again');
  now = row('1', { inputs: 2, active: 1, p1: 7 });
  clock.advance(1000);
  t.match(last, { p1: 7, p1m: 0 }, "a switch to the backup does not count that input's old totals");
  now = row('1', { inputs: 2, active: 1, p1: 1 });
  clock.advance(1000);
  t.match(last, { p1: 1, p1m: 1 }, 'a total that went down (input restarted) counts afresh');
  feed.close();
});
