// `sluice reconcile --plan --node NAME` shows one node's share of a fleet's config: offline
// against that node's applied state, or against its running server (which must be that node).
import { writeFile } from 'node:fs/promises';
import path from 'node:path';
import t from 'tap';
import { freePort, runCli, startServer, tempDir } from '../helpers/server.ts';

const doc = {
  cluster: { nodes: { a: {}, b: {} } },
  stream: [
    { id: 1, 'stream-name': 'on-a', placement: 'a' },
    { id: 2, 'stream-name': 'on-b', placement: 'b' },
    { id: 3, 'stream-name': 'also-a', placement: 'a' },
  ],
};

t.test('a node’s share, offline and against its server', async (t) => {
  const dir = await tempDir(t, 'sluice-fleet-plan-');
  const file = path.join(dir, 'config.json');
  await writeFile(file, JSON.stringify(doc));
  // No server at this address: the plan is made against the (empty) data dir.
  const env = { SLUICE_SERVER: `http://127.0.0.1:${await freePort()}` };
  const plan = (node: string) =>
    runCli(
      [
        'reconcile',
        '--plan',
        '--config',
        file,
        '--node',
        node,
        '--data-dir',
        path.join(dir, 'none'),
      ],
      { env },
    );
  const a = await plan('a');
  t.equal(a.code, 2, 'changes');
  t.match(a.stdout, /\+ stream "on-a"/);
  t.match(a.stdout, /\+ stream "also-a"/);
  t.notMatch(a.stdout, /on-b/, 'not the other node’s stream');
  const b = await plan('b');
  t.match(b.stdout, /\+ stream "on-b"/);
  t.notMatch(b.stdout, /on-a|also-a/);

  const port = await freePort();
  const srv = await startServer(t, {
    configPath: file,
    port,
    args: ['--node', 'a', '--port', String(port), '--epg-port', String(await freePort())],
  });
  const wrong = await runCli([
    'reconcile',
    '--plan',
    '--config',
    file,
    '--node',
    'b',
    '--server',
    srv.url,
  ]);
  t.equal(wrong.code, 1);
  t.match(wrong.stderr, /is node a, not b/);
  const right = await runCli([
    'reconcile',
    '--plan',
    '--config',
    file,
    '--node',
    'a',
    '--server',
    srv.url,
  ]);
  t.ok(right.code === 0 || right.code === 2, `exit ${right.code}: ${right.stderr}`);
  t.notMatch(right.stdout, /on-b/, 'the server plans its own share');
});
