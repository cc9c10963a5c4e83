// The Cache-Control policy of OTT responses (src/ott/cache-policy.ts) and which archive windows
// a shared cache may keep (closedWindow, src/dvr/window.ts).
import t from 'tap';
import { closedWindow } from '../../src/dvr/window.ts';
import { NO_CACHE, OttCachePolicy } from '../../src/ott/cache-policy.ts';

t.test('live documents: half a target duration, at least a second', async (t) => {
  const p = new OttCachePolicy();
  t.equal(p.live(6), 'public, max-age=3');
  t.equal(p.live(5), 'public, max-age=2');
  t.equal(p.live(2), 'public, max-age=1');
  t.equal(p.live(1), 'public, max-age=1', 'never 0: a cache would not keep it at all');
  t.equal(p.segment, 'public, max-age=86400, immutable');
});

t.test('blocking reloads: six targets, at most the segment max-age', async (t) => {
  const p = new OttCachePolicy();
  t.equal(p.blocking(2), 'public, max-age=12');
  p.setSegmentMaxAge(5);
  t.equal(p.blocking(2), 'public, max-age=5');
});

t.test('archive documents: an hour when closed, else as live', async (t) => {
  const p = new OttCachePolicy();
  t.equal(p.archive(true, 4), 'public, max-age=3600');
  t.equal(p.archive(false, 4), 'public, max-age=2');
  p.setSegmentMaxAge(60);
  t.equal(p.archive(true, 4), 'public, max-age=60', 'never longer than a segment is kept');
});

t.test('segment-cache-max-age 0 turns caching off everywhere', async (t) => {
  const p = new OttCachePolicy();
  t.equal(p.live(6), 'public, max-age=3');
  p.setSegmentMaxAge(0);
  for (const v of [p.segment, p.live(6), p.blocking(6), p.archive(true, 6), p.archive(false, 6)])
    t.equal(v, NO_CACHE);
  p.setSegmentMaxAge(10);
  t.equal(p.live(6), 'public, max-age=3', 'back on when it is set again');
});

t.test('closedWindow: absolute, not cut at the start, wholly recorded', async (t) => {
  const t0 = 1_700_000_000;
  const w = { from: t0 * 1000, to: (t0 + 600) * 1000 };
  const ask = { kind: 'window' as const, t: t0, d: 600 };
  t.ok(closedWindow(ask, w, w.to), 'recorded to its end');
  t.ok(closedWindow(ask, w, w.to + 5000));
  t.notOk(closedWindow(ask, w, w.to - 1), 'still being recorded');
  t.notOk(closedWindow(ask, w, undefined), 'nothing recorded');
  t.notOk(closedWindow({ kind: 'window', t: 0, d: 600 }, w, w.to), 'from the archive start');
  t.notOk(closedWindow({ kind: 'window', t: t0, d: 0 }, w, w.to), 'to now');
  t.notOk(
    closedWindow(ask, { from: w.from + 1000, to: w.to }, w.to),
    'cut at the start of the archive (it moves as the archive is pruned)',
  );
  t.ok(closedWindow({ kind: 'epg', at: t0 }, w, w.to), 'an EPG event that has ended');
  t.notOk(closedWindow({ kind: 'epg', at: t0 }, w, w.to - 1), 'an event still on air');
});
