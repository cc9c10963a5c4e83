// One data dir, one server (issue 35, item 7): a second `sluice serve` on a data dir in use is
// refused before it starts anything, naming the data dir and the holder, with a non-zero exit;
// kill -9 of the holder frees the data dir at once; `reconcile --plan` reads it meanwhile.
import { join } from 'node:path';
import t from 'tap';
import { fileTree } from '../helpers/file-tree.ts';
import { freePort, runCli, startServer, tempDir, waitFor } from '../helpers/server.ts';

/** A refused start ends as soon as it has read the lock; today's code would run until killed. */
const REFUSAL_TIMEOUT_MS = 30_000;
const RECORD_TIMEOUT_MS = 40_000;

/** A stream recorded into a storage inside the data dir: what a second server would double. */
function recordingConfig(dataDir: string): Record<string, unknown> {
  return {
    'dvr-storage-list': {
      storage: [
        {
          id: 1,
          name: 'local',
          'dir-path': join(dataDir, 'archive'),
          'cleanup-interval-sec': 1,
          'disk-emergency-bytes': 1_048_576,
        },
      ],
    },
    stream: [
      {
        id: 1,
        'stream-name': 'rec',
        pause: false,
        'ott-hls': 3,
        'ott-segment-duration': 1,
        'dvr-storage': 1,
        input: [
          {
            type: 'test',
            width: 160,
            height: 90,
            'video-bitrate': 100,
            'enable-overlay': false,
          },
        ],
      },
    ],
  };
}

async function archivedSec(url: string): Promise<number | undefined> {
  const r = await fetch(`${url}/data/dvr-storage-list`, { signal: AbortSignal.timeout(5000) });
  const list = (await r.json()) as { streams: { name: string; 'archived-sec': number }[] }[];
  return list[0]?.streams.find((s) => s.name === 'rec')?.['archived-sec'];
}

t.test('a second server on a data dir in use is refused; after kill -9 one starts', async (t) => {
  const root = await tempDir(t, 'sluice-datadir-');
  const dataDir = join(root, 'data');
  const a = await startServer(t, { config: recordingConfig(dataDir), dataDir });
  await waitFor(
    'the first server recording',
    async () => (((await archivedSec(a.url)) ?? 0) >= 2 ? true : undefined),
    RECORD_TIMEOUT_MS,
  );

  // Frozen, the first server writes nothing: whatever changes now is the second one's doing.
  const pid = a.proc.pid!;
  process.kill(pid, 'SIGSTOP');
  t.teardown(() => {
    if (a.proc.exitCode === null && a.proc.signalCode === null) process.kill(pid, 'SIGCONT');
  });
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
  process.kill(pid, 'SIGCONT');

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
  const had = (await archivedSec(a.url)) ?? 0;
  await a.kill9();
  const c = await startServer(t, { configPath: a.configPath!, port: a.port, dataDir });
  const sec = await waitFor(
    'the new server recording',
    async () => {
      const s = await archivedSec(c.url);
      return s !== undefined && s > had ? s : undefined;
    },
    RECORD_TIMEOUT_MS,
  );
  t.ok(sec > had, `the new server records on (${had} s archived before, ${sec} s now)`);
  await c.stop();
});
