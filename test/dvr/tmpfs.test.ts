// A real small file system (8 MiB tmpfs) fills with archive chunks: the writes never hit
// ENOSPC, usage stays near the limit, and every chunk that disappears was removed by cleanup.
import { execFileSync } from 'node:child_process';
import { mkdirSync } from 'node:fs';
import { mkdir } from 'node:fs/promises';
import { dirname, join } from 'node:path';
import t from 'tap';
import { statfsProbe, usedPercent } from '../../src/dvr/disk.ts';
import { TS_TRACK } from '../../src/dvr/index-db.ts';
import { chunkPath } from '../../src/dvr/recorder.ts';
import { readStorage } from '../../src/dvr/settings.ts';
import { ArchiveStorage } from '../../src/dvr/storage.ts';
import { silentLogger } from '../../src/log.ts';
import { writeDurable } from '../../src/native/fs.ts';
import { ManualClock } from '../../src/util/clock.ts';
import { applied } from '../helpers/desired.ts';
import { tempDir } from './helpers.ts';

const CHUNK_BYTES = 150 * 1024;
const CHUNKS = 200; // 30 MiB through an 8 MiB file system
const PASS_EVERY = 4;

t.test('an 8 MiB tmpfs filling up: only cleanup deletes, writes never fail', async (t) => {
  const mnt = join(tempDir(t), 'mnt');
  mkdirSync(mnt);
  execFileSync('mount', ['-t', 'tmpfs', '-o', 'size=8m', 'tmpfs', mnt]);
  t.teardown(() => execFileSync('umount', ['-l', mnt]));
  const clock = new ManualClock(Date.now());
  const storage = new ArchiveStorage(
    readStorage(
      applied('storage', '1', {
        id: 1,
        name: 'small',
        'dir-path': join(mnt, 'dvr'),
        'max-usage': 60,
        'alarm-disk-full-hysteresis': 10,
        'disk-pressure-grace-sec': 0,
        'disk-pressure-cut-sec': 60,
        'disk-emergency-bytes': 1024 * 1024,
        'cleanup-interval-sec': 3600,
      }).spec,
    ),
    { clock, log: silentLogger, probe: statfsProbe },
  );
  t.teardown(() => storage.close());
  await storage.start();
  storage.attach('s', { settings: { storage: 1, hours: 24, minHours: 0 }, active: () => true });
  const init = storage.index!.addInit('s', TS_TRACK, 'layout', '', '[]');
  let maxUsed = 0;
  let written = 0;
  for (let i = 0; i < CHUNKS; i++) {
    const startMs = clock.now();
    const uri = `seg-${i.toString(16).padStart(6, '0')}.ts`;
    const rel = chunkPath('s', TS_TRACK, startMs, uri);
    if (storage.writable) {
      await mkdir(dirname(join(storage.dir, rel)), { recursive: true });
      await writeDurable(join(storage.dir, rel), Buffer.alloc(CHUNK_BYTES, i));
      storage.commit({
        stream: 's',
        track: TS_TRACK,
        start_ms: startMs,
        duration: 2,
        bytes: CHUNK_BYTES,
        path: rel,
        uri,
        disc: 0,
        media_start: 0,
        timescale: 90000,
        init_id: init,
      });
      written++;
    }
    clock.advance(2000);
    if (i % PASS_EVERY === 0) {
      await storage.pass();
      maxUsed = Math.max(maxUsed, usedPercent(await statfsProbe(storage.dir)));
    }
  }
  await storage.pass();
  storage.flush();
  const left = storage.index!.range('s', TS_TRACK, 0, Number.MAX_SAFE_INTEGER).length;
  const deleted =
    storage.last.rollingDeleted + storage.last.trimDeleted + storage.last.emergencyDeleted;
  t.equal(written - left, deleted, 'every chunk that went was removed by cleanup');
  t.ok(storage.last.trimDeleted > 0, 'size cleanup ran');
  t.ok(written > 100, `${written} of ${CHUNKS} chunks written`);
  t.ok(
    maxUsed < 95,
    `usage peaked at ${maxUsed.toFixed(1)} % (limit 60 %, cut 30 chunks per pass)`,
  );
  const fig = await statfsProbe(storage.dir);
  t.ok(fig.free > 1024 * 1024, 'free space above the emergency floor at the end');
});
