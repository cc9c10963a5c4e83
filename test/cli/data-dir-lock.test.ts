// One data dir, one server (issue 35, item 7): a second `sluice serve` on a data dir in use is
// refused before it starts anything, naming the data dir and the holder, with a non-zero exit;
// kill -9 of the holder frees the data dir at once; `reconcile --plan` reads it meanwhile.
import { join } from 'node:path';
import t from 'tap';
import { fileTree } from '../helpers/file-tree.ts';
import {
  archivedSec,
  freeze,
  recordedBeyond,
  recordingConfig,
  storageStatus,
} from '../helpers/recording.ts';
import { freePort, runCli, startServer, tempDir } from '../helpers/server.ts';

/** A refused start ends as soon as it has read the lock; today's code would run until killed. */
const REFUSAL_TIMEOUT_MS = 30_000;

t.test('a second server on a data dir in use is refused; after kill -9 one starts', async (t) => {
  const root = await tempDir(t, 'sluice-datadir-');
  const dataDir = join(root, 'data');
  const a = await startServer(t, { config: recordingConfig(join(dataDir, 'archive')), dataDir });
  await recordedBeyond(a, 1);
  // Frozen, the first server writes nothing: whatever changes now is the second one's doing.
  const pid = a.proc.pid!;
  const resume = freeze(t, a);
  const before = { data: await fileTree(dataDir), config: await fileTree(a.dir) };
  const second = await runCli(
    [
      'serve',
      '--data-dir',
      dataDir,
      '--config',
      a.configPath!,
      '--port',
      String(await freePort()),
      '--epg-port',
      String(await freePort()),
    ],
    { timeoutMs: REFUSAL_TIMEOUT_MS },
  );
  const after = { data: await fileTree(dataDir), config: await fileTree(a.dir) };
  resume();

  t.not(second.code, null, 'the second server ended by itself');
  t.not(second.code, 0, `exit code non-zero (${second.code})`);
  t.match(second.stderr, `the data dir ${dataDir} is in use by another sluice server`);
  t.match(second.stderr, `pid ${pid} on host `, 'names the holder by pid');
  t.match(second.stderr, `admin http://127.0.0.1:${a.port}/`, "and by the holder's address");
  t.match(second.stderr, /since \d{4}-\d\d-\d\dT/, 'and when it started');
  t.match(second.stderr, 'nothing was started', 'says nothing was started');
  t.match(second.stderr, '--data-dir', 'says what to do');
  t.same(after, before, 'the second server wrote nothing: no file, no segment, no config');

  await t.test('reconcile --plan reads the data dir in use without taking it', async (t) => {
    const offline = await runCli(
      ['reconcile', '--plan', '--config', a.configPath!, '--data-dir', dataDir],
      {
        env: { SLUICE_SERVER: `http://127.0.0.1:${await freePort()}` },
      },
    );
    t.match(offline.stderr, `comparing with ${join(dataDir, 'applied-state.json')}`);
    t.equal(offline.code, 0, 'no changes against the applied state');
  });

  // kill -9: the kernel drops the lock with the process; a new server starts on the data dir.
  const had = archivedSec(await storageStatus(a));
  await a.kill9();
  const c = await startServer(t, { configPath: a.configPath!, port: a.port, dataDir });
  const sec = await recordedBeyond(c, had);
  t.ok(sec > had, `the new server records on (${had} s archived before, ${sec} s now)`);
  await c.stop();
});
