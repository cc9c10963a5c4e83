// The hour-block playlist cache gives exactly vodPlaylist()'s text for any window (edges,
// gaps, discontinuities, init changes), and drops a block when a chunk in it is added or
// removed through the storage.
import t from 'tap';
import { type ChunkRow, type NewChunk, TS_TRACK } from '../../src/dvr/index-db.ts';
import { BLOCK_MS, PlaylistBlocks } from '../../src/dvr/playlist-blocks.ts';
import { HOUR_MS } from '../../src/dvr/settings.ts';
import { vodPlaylist } from '../../src/dvr/views.ts';
import { addChunk, attach, testStorage } from './helpers.ts';

const H0 = Math.floor(Date.UTC(2026, 4, 1, 9, 0, 0) / BLOCK_MS) * BLOCK_MS;

t.test('same text as vodPlaylist for any window, TS and fMP4', async (t) => {
  const { storage } = await testStorage(t);
  const index = storage.index!;
  // 3 hours of 2 s chunks with a 40 s gap, a flagged discontinuity and uneven durations;
  // rows only (no files): the playlist reads the index alone.
  const initTs = index.addInit('s', TS_TRACK, 'a', '', '[]');
  const initA = index.addInit('s', 'c256', 'a', '', '[]');
  const initB = index.addInit('s', 'c256', 'b', '', '[]');
  const rows: NewChunk[] = [];
  let at = H0 - 10_000;
  for (let i = 0; at < H0 + 3 * HOUR_MS; i++) {
    const duration = i % 7 === 0 ? 1.92 : 2;
    const base = { stream: 's', start_ms: at, duration, bytes: 1000, media_start: 0 };
    const more = { timescale: 90000, disc: i === 900 ? 1 : 0 };
    rows.push({
      ...base,
      ...more,
      track: TS_TRACK,
      path: `t${i}`,
      uri: `seg-${i}.ts`,
      init_id: initTs,
    });
    // A new init (track layout) for the last hour of the CMAF track.
    const init = at >= H0 + 2 * HOUR_MS + 1234 ? initB : initA;
    rows.push({ ...base, ...more, track: 'c256', path: `c${i}`, uri: `${i}.m4s`, init_id: init });
    at += duration * 1000 + (i === 2000 ? 40_000 : 0);
  }
  index.insertMany(rows);
  storage.indexChanged();
  const ref = (track: string, from: number, to: number) => {
    const rows = index.range('s', track, from, to);
    return track === TS_TRACK
      ? vodPlaylist(rows, { uri: (r) => r.uri, fallbackTarget: 4 })
      : vodPlaylist(rows, {
          uri: (r) => `dvr-i${r.init_id}/${r.id}.m4s`,
          map: (r) => `dvr-i${r.init_id}/init.mp4`,
          fallbackTarget: 4,
        });
  };
  const windows: [number, number][] = [
    [0, Number.MAX_SAFE_INTEGER],
    [H0, H0 + 2 * HOUR_MS],
    [H0 + 1234, H0 + 2 * HOUR_MS + 999],
    [H0 - 5000, H0 + 7000],
    [H0 + HOUR_MS, H0 + HOUR_MS],
    [H0 + 10 * HOUR_MS, H0 + 11 * HOUR_MS],
    [H0 + 1800_000, H0 + 3 * HOUR_MS + 1],
  ];
  for (const track of [TS_TRACK, 'c256']) {
    for (const [from, to] of windows) {
      // Twice: cold blocks, then cached ones.
      for (const pass of ['cold', 'cached']) {
        const got = storage.blocks.playlist('s', track, from, to, 4).text;
        t.equal(got, ref(track, from, to), `${track} [${from - H0}, ${to - H0}) ${pass}`);
      }
    }
  }
});

t.test('a block is dropped when a chunk in it is added or removed', async (t) => {
  const { storage, clock } = await testStorage(t);
  attach(storage, 's', 1);
  const h0 = Math.floor(clock.now() / BLOCK_MS) * BLOCK_MS - 3 * HOUR_MS;
  let rows: ChunkRow[] = [];
  for (let i = 0; i < 3600; i++) rows.push(addChunk(storage, 's', h0 + i * 2000));
  const whole = () => storage.blocks.playlist('s', TS_TRACK, h0, h0 + 3 * HOUR_MS, 2);
  t.equal(whole().count, 3600);
  // Through the recorder's path: commit + flush.
  const last = rows[rows.length - 1]!;
  storage.commit({ ...last, start_ms: h0 + 7_200_000, path: 'x/new.ts', uri: 'seg-new.ts' });
  storage.flush();
  t.equal(whole().count, 3601, 'a new chunk shows in the cached window');
  t.match(whole().text, /seg-new\.ts\n#EXT-X-ENDLIST\n$/);
  // Rolling cleanup (1 h retention) removes the first hour through the storage.
  clock.advance(h0 + 4 * HOUR_MS + 1000 - clock.now());
  await storage.pass();
  rows = storage.index!.range('s', TS_TRACK, 0, Number.MAX_SAFE_INTEGER);
  t.equal(whole().count, rows.length, 'removed chunks are gone from the cached window');
  t.ok(rows.length < 3601);
});

t.test('the cache stays under its size limit', async (t) => {
  const rows = Array.from({ length: 100 }, (_, i) => ({
    id: i + 1,
    start_ms: H0 + i * 36_000_00,
    duration: 2,
    disc: 0,
    init_id: 1,
    uri: `seg-${i}.ts`,
  }));
  let queries = 0;
  const blocks = new PlaylistBlocks(
    (_s, _t, from, to) => {
      queries++;
      return rows.filter((r) => r.start_ms >= from && r.start_ms < to);
    },
    () => ({ first: rows[0]!.start_ms, last: rows[rows.length - 1]!.start_ms }),
    200,
  );
  blocks.playlist('s', TS_TRACK, H0, H0 + 100 * HOUR_MS, 2);
  t.equal(queries, 100);
  blocks.playlist('s', TS_TRACK, H0 + 99 * HOUR_MS, H0 + 100 * HOUR_MS, 2);
  t.equal(queries, 100, 'the most recent block is still cached');
  blocks.playlist('s', TS_TRACK, H0, H0 + HOUR_MS, 2);
  t.equal(queries, 101, 'an old block was evicted');
});

t.test('closed blocks are kept in the index: a restart joins stored text', async (t) => {
  const { storage, clock } = await testStorage(t);
  attach(storage, 's');
  const h0 = Math.floor(clock.now() / BLOCK_MS) * BLOCK_MS - 3 * HOUR_MS;
  // Through the recorder's path (commit + flush, one turn each): crossing into a new hour
  // renders the hour before ahead of any request.
  const { id: _first, ...row } = addChunk(storage, 's', h0 - 10 * HOUR_MS);
  for (let i = 0; i < 3 * 1800; i++) {
    const start = h0 + i * 2000;
    storage.commit({ ...row, start_ms: start, path: `p${i}`, uri: `seg-${i}.ts` });
    storage.flush();
    if (i % 1800 === 0) await new Promise((r) => setImmediate(r));
  }
  await new Promise((r) => setImmediate(r));
  const index = storage.index!;
  t.ok(index.blocks.get('s', TS_TRACK, h0), 'the first hour was rendered when the second began');
  t.ok(index.blocks.get('s', TS_TRACK, h0 + HOUR_MS), 'the second when the third began');
  t.equal(index.blocks.get('s', TS_TRACK, h0 + 2 * HOUR_MS), undefined, 'the open hour is not');
  const ref = vodPlaylist(index.range('s', TS_TRACK, h0, h0 + 2 * HOUR_MS), {
    uri: (r) => r.uri,
    fallbackTarget: 2,
  });
  // A fresh cache (a restarted server) that may not render: only stored blocks can answer.
  const fresh = new PlaylistBlocks(
    () => {
      throw new Error('rendered from rows');
    },
    (s, tr) => index.extent(s, tr),
    1 << 20,
    () => index.blocks,
  );
  t.equal(fresh.playlist('s', TS_TRACK, h0, h0 + 2 * HOUR_MS, 2).text, ref);
  // A chunk added to or removed from a stored hour drops it in the same transaction.
  const [id] = index.insertMany([
    { ...row, start_ms: h0 + 1001, path: 'late', uri: 'seg-late.ts' },
  ]);
  t.equal(index.blocks.get('s', TS_TRACK, h0), undefined, 'insert dropped the stored hour');
  t.ok(index.blocks.get('s', TS_TRACK, h0 + HOUR_MS), 'the other hour stays');
  index.deleteMany([id!]);
  t.ok(index.blocks.get('s', TS_TRACK, h0 + HOUR_MS));
  const gone = index.range('s', TS_TRACK, h0 + HOUR_MS, h0 + HOUR_MS + 1)[0]!;
  index.deleteMany([gone.id]);
  t.equal(index.blocks.get('s', TS_TRACK, h0 + HOUR_MS), undefined, 'delete dropped it');
});
