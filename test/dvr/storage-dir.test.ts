// The storage directory going away under a running storage (real directories, a real tmpfs
// mount): removal and unmount must give Error — never a silently recreated empty directory —
// and a directory put back on the same file system brings the storage back to Ready.
import { execFileSync } from 'node:child_process';
import { existsSync, mkdirSync, readdirSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import t from 'tap';
import { statfsProbe } from '../../src/dvr/disk.ts';
import { INDEX_FILE } from '../../src/dvr/index-db.ts';
import { readStorage } from '../../src/dvr/settings.ts';
import { ArchiveStorage } from '../../src/dvr/storage.ts';
import { silentLogger } from '../../src/log.ts';
import { ManualClock } from '../../src/util/clock.ts';
import { applied } from '../helpers/desired.ts';
import { addChunk, attach, tempDir, testStorage } from './helpers.ts';

t.test('directory removed while Ready → Error (not recreated); recreated → Ready', async (t) => {
  const { storage, clock } = await testStorage(t);
  attach(storage, 'a');
  addChunk(storage, 'a', clock.now() - 10_000);
  rmSync(storage.dir, { recursive: true, force: true });
  await storage.pass();
  t.equal(storage.state, 'error');
  t.notOk(storage.writable, 'recording stops');
  t.notOk(existsSync(storage.dir), 'the pass did not recreate the directory');
  await storage.pass();
  t.equal(storage.state, 'error', 'still Error while the directory is missing');
  mkdirSync(storage.dir);
  await storage.pass();
  t.equal(storage.state, 'ready', 'back once the directory exists again');
  t.ok(existsSync(join(storage.dir, INDEX_FILE)), 'a fresh index');
  t.ok(storage.writable);
});

t.test('directory removed and recreated between two passes → Error, then Ready', async (t) => {
  const { storage } = await testStorage(t);
  rmSync(storage.dir, { recursive: true, force: true });
  mkdirSync(storage.dir);
  await storage.pass();
  t.equal(storage.state, 'error', 'the index the storage had open is gone');
  t.match(storage.message, /removed/);
  await storage.pass();
  t.equal(storage.state, 'ready');
});

t.test('unmounted: the bare mount point is not taken for the archive', async (t) => {
  const mnt = join(tempDir(t), 'mnt');
  mkdirSync(mnt);
  execFileSync('mount', ['-t', 'tmpfs', '-o', 'size=4m', 'tmpfs', mnt]);
  let mounted = true;
  t.teardown(() => {
    if (mounted) execFileSync('umount', ['-l', mnt]);
  });
  const storage = new ArchiveStorage(
    readStorage(
      applied('storage', '1', { id: 1, name: 'm', 'dir-path': mnt, 'disk-emergency-bytes': 1024 })
        .spec,
    ),
    { clock: new ManualClock(Date.now()), log: silentLogger, probe: statfsProbe },
  );
  t.teardown(() => storage.close());
  await storage.start();
  t.equal(storage.state, 'ready');
  execFileSync('umount', ['-l', mnt]); // lazy: the open index keeps the old mount busy
  mounted = false;
  await storage.pass();
  t.equal(storage.state, 'error');
  await storage.pass();
  t.equal(storage.state, 'error', 'an empty directory on another file system is no recovery');
  t.match(storage.message, /another file system/);
  t.same(readdirSync(mnt), [], 'nothing written into the mount point');
});
