// Read-only SQL in its child process: answers, refusals, the row cap, and the hard time limit
// that stops a statement which never yields a row (the old between-rows check could not).
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import t from 'tap';
import { EpgDatabase } from '../../src/epg/database.ts';
import { runReadOnlySql, SQL_KILL_GRACE_MS } from '../../src/epg/sql.ts';
import { HttpError } from '../../src/errors.ts';

const FAST_LIMIT_MS = 300;
/** A statement that produces no row for ever: counting an unbounded recursive sequence. */
const ENDLESS =
  'WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c) SELECT count(*) FROM c';

t.test('runReadOnlySql', async (t) => {
  const dir = mkdtempSync(join(tmpdir(), 'sluice-epg-sql-'));
  t.teardown(() => rmSync(dir, { recursive: true, force: true }));
  const path = join(dir, 'src-1.sqlite');
  const db = new EpgDatabase(path);
  db.upsertChannel('a.example', 3600);
  db.addEvent('a.example', 100, 200, [{ lang: 1, title: 'T', desc: '' }]);
  db.close();
  const limits = { maxRows: 1000, maxMs: FAST_LIMIT_MS };

  const r = await runReadOnlySql(path, 'SELECT channel_id, time_zone FROM channel', limits);
  t.same(r, {
    columns: ['channel_id', 'time_zone'],
    rows: [['a.example', 3600]],
    truncated: false,
  });

  const refused = await runReadOnlySql(path, 'DELETE FROM event', limits).catch((e) => e);
  t.ok(refused instanceof HttpError, 'a write is refused');
  t.match((refused as HttpError).message, /only read statements/);
  const twoStatements = await runReadOnlySql(path, 'SELECT 1; SELECT 2', limits).catch((e) => e);
  t.match((twoStatements as Error).message, /SQL refused/, 'one statement only');

  const capped = await runReadOnlySql(
    path,
    'WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c) SELECT x FROM c',
    { maxRows: 50, maxMs: FAST_LIMIT_MS },
  );
  t.equal(capped.rows.length, 50, 'row cap');
  t.equal(capped.truncated, true);

  // Timers keep firing while the statement runs: the server's event loop is not blocked.
  let ticks = 0;
  const tick = setInterval(() => ticks++, 20);
  const started = performance.now();
  const slow = await runReadOnlySql(path, ENDLESS, limits).catch((e) => e);
  const took = performance.now() - started;
  clearInterval(tick);
  t.ok(slow instanceof HttpError, 'the endless statement is stopped');
  t.equal((slow as HttpError).status, 400);
  t.match((slow as Error).message, /ran past the 300 ms time limit/);
  t.ok(took >= FAST_LIMIT_MS, `not before the limit (${took.toFixed(0)} ms)`);
  t.ok(took < FAST_LIMIT_MS + SQL_KILL_GRACE_MS + 5000, 'stopped soon after the limit');
  t.ok(ticks >= 5, `event loop kept running (${ticks} ticks)`);
});
