// `sluice reconcile --plan --server` against a server that reads the request and never answers,
// garbage collections forced all along: the command gives up at its deadline with the reason in
// words, and the connection to that server is closed.
import { writeFile } from 'node:fs/promises';
import path from 'node:path';
import t from 'tap';
import { reconcileCommand } from '../../src/cli/reconcile.ts';
import { SERVER_TIMEOUT_MS } from '../../src/cli/server-request.ts';
import { collectGarbageRepeatedly } from '../helpers/gc.ts';
import { tempDir } from '../helpers/server.ts';
import { startSlowPeer } from '../helpers/slow-peer.ts';

/** Elapsed time is only an upper bound: a busy machine is late, never early. */
const MARGIN_MS = 5000;

t.test('a server that never answers: reconcile --plan gives up at its deadline', async (t) => {
  collectGarbageRepeatedly(t);
  const dir = await tempDir(t);
  const config = path.join(dir, 'config.json');
  await writeFile(config, '{}\n');
  const peer = await startSlowPeer(t, 'silent', '/');
  const server = peer.url.replace(/\/$/, '');
  const started = performance.now();
  const err = await reconcileCommand(['--plan', '--config', config, '--server', server]).then(
    () => new Error('answered'),
    (e: Error) => e,
  );
  const took = performance.now() - started;
  t.equal(
    err.message,
    `cannot reach ${server}: no answer from ${server}/config/plan in ${SERVER_TIMEOUT_MS / 1000} s`,
  );
  t.ok(took < SERVER_TIMEOUT_MS + MARGIN_MS, `gave up after ${Math.round(took)} ms`);
  await peer.closed(0, 2000);
  t.equal(peer.open(), 0, 'no connection left to the server');
});
