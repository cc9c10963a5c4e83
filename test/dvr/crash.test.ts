// kill -9 while recording, then restart: every indexed chunk is whole on disk, files the index
// does not know are orphans and the orphan scan collects them; playback of what is left works.
import { spawn } from 'node:child_process';
import { existsSync, statSync } from 'node:fs';
import { join } from 'node:path';
import t from 'tap';
import { statfsProbe } from '../../src/dvr/disk.ts';
import { scanOrphans } from '../../src/dvr/orphans.ts';
import { readStorage } from '../../src/dvr/settings.ts';
import { ArchiveStorage } from '../../src/dvr/storage.ts';
import { vodPlaylist } from '../../src/dvr/views.ts';
import { silentLogger } from '../../src/log.ts';
import { systemClock } from '../../src/util/clock.ts';
import { applied } from '../helpers/desired.ts';
import { tempDir } from './helpers.ts';

/** The writer reports each chunk committed; killed past this one, well over the 20 chunks the
 *  test wants indexed. */
const KILL_AFTER_CHUNK = 40;

t.test('kill -9 while recording: index and files agree after restart', async (t) => {
  const dir = join(tempDir(t), 'store');
  const child = spawn(
    process.execPath,
    ['--import', 'tsx', join(import.meta.dirname, 'fixtures/crash-writer.ts'), dir],
    {
      stdio: ['ignore', 'pipe', 'inherit'],
    },
  );
  t.teardown(() => child.kill('SIGKILL'));
  // Killed once it has committed KILL_AFTER_CHUNK chunks, while it goes on writing: mid-flight.
  await new Promise<void>((resolve, reject) => {
    const timer = setTimeout(
      () => reject(new Error(`writer did not reach chunk ${KILL_AFTER_CHUNK}`)),
      20_000,
    );
    let partial = '';
    child.stdout!.on('data', (d: Buffer) => {
      const lines = (partial + d.toString()).split('\n');
      partial = lines.pop() ?? '';
      if (lines.some((l) => Number(l) >= KILL_AFTER_CHUNK)) {
        clearTimeout(timer);
        resolve();
      }
    });
  });
  const exited = new Promise((r) => child.once('exit', r));
  child.kill('SIGKILL');
  await exited;

  const storage = new ArchiveStorage(
    readStorage(
      applied('storage', '1', { id: 1, name: 'after', 'dir-path': dir, 'disk-emergency-bytes': 0 })
        .spec,
    ),
    {
      clock: systemClock,
      log: silentLogger,
      probe: statfsProbe,
    },
  );
  t.teardown(() => storage.close());
  await storage.start();
  const rows = storage.index!.range('s', 'ts', 0, Number.MAX_SAFE_INTEGER);
  t.ok(rows.length > 20, `${rows.length} chunks indexed before the kill`);
  let whole = 0;
  for (const r of rows)
    if (existsSync(join(dir, r.path)) && statSync(join(dir, r.path)).size === r.bytes) whole++;
  t.equal(whole, rows.length, 'every indexed chunk is on disk, whole');
  const res = await scanOrphans(dir, storage.index!, Date.now(), 0);
  t.equal(
    res.scanned - res.deleted,
    rows.length,
    'after the orphan scan only indexed chunks remain',
  );
  const again = await scanOrphans(dir, storage.index!, Date.now(), 0);
  t.equal(again.deleted, 0, 'nothing left to collect');
  const text = vodPlaylist(rows, { uri: (r) => r.uri, fallbackTarget: 2 });
  t.equal(
    (text.match(/#EXTINF/g) ?? []).length,
    rows.length,
    'the archive still plays as a VOD list',
  );
});
