// A stream worker that dies is started again with its streams (src/plane/pool.ts); a stream
// closed while its worker is down stays closed — the new worker must not run it again.
import type { Worker } from 'node:worker_threads';
import t from 'tap';
import { silentLogger } from '../../src/log.ts';
import { StreamWorkers } from '../../src/plane/pool.ts';
import type { RemoteStream } from '../../src/plane/remote-stream.ts';
import { waitFor } from '../helpers/server.ts';
import { freePort, makeHost, streamResource, tempDir } from '../helpers/stream-host.ts';

const BOOT_TIMEOUT_MS = 30_000;

t.test('a stream closed while its worker restarts is not started again', async (t) => {
  const dir = tempDir(t);
  const host = makeHost(dir);
  const pool = new StreamWorkers({
    services: host.services,
    router: host.router,
    log: silentLogger,
    dataDir: dir,
    logLevel: 'silent',
    desired: () => undefined,
  });
  t.teardown(() => pool.close());
  pool.setWorkers(1);
  const udp = async () => [{ type: 'udp', address: '127.0.0.1', port: await freePort() }];
  const gone = (await pool.place(
    streamResource({ 'stream-name': 'gone', 'ott-hls': 1, input: await udp() }),
    host,
  )) as RemoteStream;
  await waitFor('the worker announces the stream', () => host.router.lookup('gone'));

  // The worker thread dies (as on a crash); the stream is deleted before it is back.
  const thread = (pool as unknown as { list: { worker: Worker }[] }).list[0]!.worker;
  await thread.terminate();
  await gone.close().catch(() => {});

  // Once the new worker runs a stream, every create it was sent before has been carried out.
  const other = streamResource({ 'stream-name': 'other', 'ott-hls': 1, input: await udp() });
  await waitFor(
    'the worker started again',
    () => pool.place(other, host).catch(() => undefined),
    BOOT_TIMEOUT_MS,
  );
  t.ok(host.router.lookup('other'), 'the new worker runs the stream placed after');
  t.notOk(host.router.lookup('gone'), 'the closed stream is not run again');
  t.same(
    pool.workers().map((w) => w.streams),
    [1],
    'the worker holds one stream',
  );
});
