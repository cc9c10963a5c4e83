// One storage directory, one server (issue 35, item 7): two servers with different data dirs
// given the same `dir-path`. The second one's storage goes to Error naming the first, and it
// writes nothing there while its stream runs; kill -9 of the first makes it Ready and it records.
import { existsSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import t from 'tap';
import { ArchiveIndex, INDEX_FILE } from '../../src/dvr/index-db.ts';
import { LOCK_FILE, scanOrphans } from '../../src/dvr/orphans.ts';
import { fileTree } from '../helpers/file-tree.ts';
import {
  archivedSec,
  freeze,
  recordedBeyond,
  recordingConfig,
  storageStatus,
} from '../helpers/recording.ts';
import { startServer, tempDir, waitFor } from '../helpers/server.ts';

const RECORD_TIMEOUT_MS = 40_000;
/** Live segments of the second server's stream to see before judging that it recorded none. */
const LIVE_SEGMENTS = 3;

t.test(
  'a storage dir another server records into: Error, nothing written; kill -9 frees it',
  async (t) => {
    const store = join(await tempDir(t, 'sluice-shared-store-'), 'archive');
    const a = await startServer(t, { config: recordingConfig(store) });
    await recordedBeyond(a, 1);
    // Frozen, the first server writes nothing: whatever changes now is the second one's doing.
    const pid = a.proc.pid!;
    freeze(t, a);
    const before = await fileTree(store);
    const b = await startServer(t, { config: recordingConfig(store) });
    const refused = await waitFor(
      "the second server's storage leaving not-ready",
      async () => {
        const s = await storageStatus(b);
        return s && s.state !== 'not-ready' ? s : undefined;
      },
      RECORD_TIMEOUT_MS,
    );
    t.equal(refused.state, 'error', 'the storage is in Error');
    t.match(refused.message, `directory ${store} is in use by another sluice server`);
    t.match(refused.message, `pid ${pid} on host `, 'names the holder by pid');
    t.match(refused.message, `data dir ${a.dataDir}`, "and by the holder's data dir");
    t.match(refused.message, 'another dir-path', 'says what to do');
    // Its stream runs meanwhile: had the storage been Ready, these segments would be recorded.
    await waitFor(
      `${LIVE_SEGMENTS} live segments on the second server`,
      async () => {
        const r = await fetch(`${b.url}/rec/index.m3u8`, { signal: AbortSignal.timeout(5000) });
        const n = r.ok ? ((await r.text()).match(/#EXTINF/g) ?? []).length : 0;
        return n >= LIVE_SEGMENTS ? true : undefined;
      },
      RECORD_TIMEOUT_MS,
    );
    t.same(await fileTree(store), before, 'the second server wrote nothing into the directory');

    // kill -9 (of the stopped process): the lock goes with it; the next pass makes it Ready.
    await a.kill9();
    const ready = await waitFor(
      'the storage ready on the second server',
      async () => {
        const s = await storageStatus(b);
        return s?.state === 'ready' ? s : undefined;
      },
      RECORD_TIMEOUT_MS,
    );
    t.equal(ready.message, '', 'no message once ready');
    const had = archivedSec(ready);
    const now = await recordedBeyond(b, had);
    t.ok(now > had, `records on (${had} s archived when ready, ${now} s now)`);
    await b.stop();
  },
);

t.test('the orphan scan never removes the lock file (the lock is on its inode)', async (t) => {
  const dir = await tempDir(t, 'sluice-lock-orphan-');
  writeFileSync(join(dir, LOCK_FILE), '{}\n');
  const index = new ArchiveIndex(join(dir, INDEX_FILE));
  t.teardown(() => index.close());
  const res = await scanOrphans(dir, index, Date.now() + 3_600_000);
  t.equal(res.deleted, 0, 'nothing deleted');
  t.ok(existsSync(join(dir, LOCK_FILE)), 'the lock file stays');
});
