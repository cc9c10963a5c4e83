// Storage state machine and cleanup with a ManualClock and injected disk figures: rolling,
// size-based (grace, cut per stream, proportional, min hours, sessions, hysteresis),
// emergency and recovery, orphan scan, directory loss.
import { existsSync, mkdirSync, renameSync, utimesSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import t from 'tap';
import { HOUR_MS } from '../../src/dvr/settings.ts';
import { addChunk, addRun, attach, GIB, testStorage } from './helpers.ts';

const count = (
  s: { index?: { db: { prepare(q: string): { get(...a: unknown[]): unknown } } } },
  stream: string,
) =>
  (
    s.index!.db.prepare('SELECT COUNT(*) AS n FROM chunk WHERE stream = ?').get(stream) as {
      n: number;
    }
  ).n;

t.test('a new storage becomes Ready on its first good probe', async (t) => {
  const { storage } = await testStorage(t);
  t.equal(storage.state, 'ready');
  t.equal(storage.status().state, 'ready');
  t.ok(storage.writable);
});

t.test('rolling cleanup trims by hours, skips open sessions, deletes files', async (t) => {
  const { storage, clock } = await testStorage(t);
  const now = clock.now();
  attach(storage, 'a', 1);
  const rows = addRun(storage, 'a', now - 3 * HOUR_MS, 18, { duration: 600 });
  const slot = storage.protect('a', now - 2 * HOUR_MS, now - 1.5 * HOUR_MS);
  await storage.pass();
  const left = storage.index!.range('a', 'ts', 0, now + 1);
  const kept = new Set(left.map((r) => r.start_ms));
  for (const r of rows) {
    const old = r.start_ms < now - HOUR_MS;
    const prot = r.start_ms >= now - 2 * HOUR_MS && r.start_ms < now - 1.5 * HOUR_MS;
    t.equal(kept.has(r.start_ms), !old || prot, `chunk at ${(r.start_ms - now) / 60000} min`);
    t.equal(existsSync(join(storage.dir, r.path)), !old || prot);
  }
  storage.release(slot);
  await storage.pass();
  t.equal(storage.index!.range('a', 'ts', 0, now - HOUR_MS).length, 0, 'released slot: trimmed');
});

t.test('size cleanup: grace, cut per stream, proportional, min hours, hysteresis', async (t) => {
  const disk = { total: 100 * GIB, used: 95 * GIB, free: 5 * GIB };
  const { storage, clock } = await testStorage(
    t,
    { 'disk-pressure-grace-sec': 60, 'disk-pressure-cut-sec': 300, 'cleanup-interval-sec': 3600 },
    disk,
  );
  const now = clock.now();
  attach(storage, 'a');
  attach(storage, 'b');
  addRun(storage, 'a', now - 10 * HOUR_MS, 20, { duration: 100, bytes: GIB });
  addRun(storage, 'b', now - 10 * HOUR_MS, 10, { duration: 100, bytes: GIB });
  await storage.pass();
  t.ok(storage.alarm, 'alarm raised above max-usage');
  t.equal(storage.status()['pressure-since-sec'], Math.floor(clock.now() / 1000));
  t.equal(count(storage, 'a') + count(storage, 'b'), 30, 'nothing cut before the grace');
  clock.advance(30_000);
  await storage.pass();
  t.equal(count(storage, 'a') + count(storage, 'b'), 30, 'still within the grace');
  clock.advance(31_000);
  await storage.pass();
  // 7 GiB of 30 GiB: each stream gives 7/30 of its seconds — a 467 s (cut to 300 s = 3
  // chunks), b 233 s (2 chunks); b gives one more towards 7 GiB, up to its own cut.
  t.equal(count(storage, 'a'), 17, 'a: cut limited to 300 s = 3 chunks');
  t.equal(count(storage, 'b'), 7, 'b: 7/30 of its 1000 s = 2 chunks, 1 more up to the cut');
  t.equal(storage.status()['last-cleanup']['pressure-trim-freed-bytes'], 6 * GIB);

  disk.used = 89 * GIB; // below max-usage, above the hysteresis margin: trimming goes on
  disk.free = 11 * GIB;
  await storage.pass();
  t.equal(count(storage, 'a'), 16, 'a: 1/24 of 1700 s = 71 s, one chunk');
  t.equal(count(storage, 'b'), 7, 'b: 1/24 of 700 s = 29 s, less than half a chunk');
  t.ok(storage.alarm, 'alarm holds until the margin');

  disk.used = 87.9 * GIB;
  disk.free = 12.1 * GIB;
  await storage.pass();
  t.notOk(storage.alarm, 'alarm cleared at max-usage − hysteresis');
  t.equal(storage.pressureSince, 0);
  t.equal(count(storage, 'a') + count(storage, 'b'), 23, 'nothing more cut');
});

t.test('size cleanup respects min hours and open sessions', async (t) => {
  const disk = { total: 100 * GIB, used: 95 * GIB, free: 5 * GIB };
  const { storage, clock } = await testStorage(t, { 'disk-pressure-grace-sec': 0 }, disk);
  const now = clock.now();
  attach(storage, 'young', 24, 20);
  attach(storage, 'held', 24, 0);
  addRun(storage, 'young', now - 10 * HOUR_MS, 10, { duration: 100, bytes: GIB });
  const held = addRun(storage, 'held', now - 10 * HOUR_MS, 10, { duration: 100, bytes: GIB });
  storage.protect('held', held[0]!.start_ms, held[5]!.start_ms);
  await storage.pass();
  t.equal(count(storage, 'young'), 10, 'chunks younger than min hours stay');
  const left = storage.index!.range('held', 'ts', 0, now).map((r) => r.start_ms);
  for (let i = 0; i < 5; i++) t.ok(left.includes(held[i]!.start_ms), `protected chunk ${i} stays`);
  t.ok(left.length < 10, 'unprotected chunks were cut');
});

t.test('emergency: Error, aggressive cut, recovery only at twice the floor', async (t) => {
  const disk = { total: 100 * GIB, used: 99 * GIB, free: 1 * GIB };
  const { storage, clock } = await testStorage(
    t,
    { 'disk-emergency-bytes': 2 * GIB, 'disk-pressure-grace-sec': 3600 },
    { total: 100 * GIB, used: 50 * GIB, free: 50 * GIB },
  );
  const now = clock.now();
  attach(storage, 'a', 24, 20);
  addRun(storage, 'a', now - 2 * HOUR_MS, 10, { duration: 100, bytes: GIB });
  storage.protect('a', 0, now);
  t.equal(storage.state, 'ready');
  // Swap the figures under the storage (the probe returns a copy of the test's object).
  const probeFigures = (storage as unknown as { deps: { probe: () => Promise<unknown> } }).deps;
  probeFigures.probe = async () => ({ ...disk });
  await storage.pass();
  t.equal(storage.state, 'error');
  t.notOk(storage.writable, 'recording stops');
  t.equal(count(storage, 'a'), 7, 'cut 3 GiB (to 2 × floor) despite min hours and the session');
  disk.free = 3 * GIB;
  await storage.pass();
  t.equal(storage.state, 'error', '3 GiB free is not yet twice the floor');
  t.equal(
    storage.message,
    `free space ${3 * GIB} below 2 × disk-emergency-bytes (recovery) ${4 * GIB}`,
    'the message tells the free space now, not at the fall',
  );
  disk.free = 4 * GIB;
  disk.used = 60 * GIB;
  await storage.pass();
  t.equal(storage.state, 'ready', 'recovered at 2 × floor');
  t.ok(storage.writable);
});

t.test('orphan scan: unknown files older than 60 s go, younger and indexed stay', async (t) => {
  const { storage, clock } = await testStorage(t);
  const now = clock.now();
  const row = addChunk(storage, 'a', now - 1000);
  const dir = join(storage.dir, 'a', 'stray');
  mkdirSync(dir, { recursive: true });
  const old = join(dir, 'old.ts');
  const young = join(dir, 'young.ts');
  writeFileSync(old, 'x');
  writeFileSync(young, 'y');
  const past = (now - 120_000) / 1000;
  utimesSync(old, past, past);
  utimesSync(join(storage.dir, row.path), past, past);
  await storage.orphans();
  t.notOk(existsSync(old), 'old orphan deleted');
  t.ok(existsSync(young), 'young orphan kept');
  t.ok(existsSync(join(storage.dir, row.path)), 'indexed chunk kept');
  t.equal(storage.status()['last-cleanup']['orphans-deleted'], 1);
  t.ok(existsSync(join(storage.dir, 'sluice-dvr.sqlite')), 'index kept');
});

t.test('orphan scan runs shortly after start and on pressure', async (t) => {
  const disk = { total: 100 * GIB, used: 40 * GIB, free: 60 * GIB };
  const { storage, clock } = await testStorage(t, {}, disk);
  t.equal(storage.last.orphansAt, 0);
  clock.advance(16_000);
  await storage.pass();
  await storage.orphanScan;
  t.ok(storage.last.orphansAt > 0, 'first scan after start');
  storage.last.orphansAt = 0;
  disk.used = 95 * GIB;
  await storage.pass();
  await storage.orphanScan;
  t.ok(storage.last.orphansAt > 0, 'scan when pressure starts');
});

t.test('directory lost → Error; back with room → Ready', async (t) => {
  const { storage } = await testStorage(t);
  const moved = `${storage.dir}-gone`;
  renameSync(storage.dir, moved);
  writeFileSync(storage.dir, 'not a directory');
  await storage.pass();
  t.equal(storage.state, 'error');
  t.match(storage.message, /unavailable/);
  t.equal(storage.index, undefined, 'index closed');
  const { rmSync } = await import('node:fs');
  rmSync(storage.dir);
  renameSync(moved, storage.dir);
  await storage.pass();
  t.equal(storage.state, 'ready');
  t.ok(storage.index, 'index reopened');
});

t.test(
  'a full disk refusing the index deletion: files go first, the pass does not throw',
  async (t) => {
    const { storage } = await testStorage(t, { 'disk-emergency-bytes': 2 * GIB });
    const now = Date.now();
    attach(storage, 'a');
    const rows = addRun(storage, 'a', now - HOUR_MS, 4, { duration: 100, bytes: GIB });
    const deps = storage as unknown as { deps: { probe: () => Promise<unknown> } };
    deps.deps.probe = async () => ({ total: 100 * GIB, used: 99 * GIB, free: 1 * GIB });
    const index = storage.index!;
    const deleteMany = index.deleteMany.bind(index);
    let refused = 0;
    index.deleteMany = (ids: number[]) => {
      if (refused++ === 0)
        throw Object.assign(new Error('database or disk is full'), { code: 'SQLITE_FULL' });
      return deleteMany(ids);
    };
    await storage.pass();
    t.equal(storage.state, 'error', 'emergency');
    t.ok(storage.last.emergencyDeleted > 0, 'the emergency cut went through');
    t.notOk(existsSync(join(storage.dir, rows[0]!.path)), 'the oldest file is gone');
    index.deleteMany = () => {
      throw new Error('index broken');
    };
    await storage.pass(); // logged, not thrown
    t.pass('a failing pass does not reject');
  },
);
