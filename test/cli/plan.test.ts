// `sluice reconcile --plan` against a real running server (dry-run POST /config/plan) and,
// once the server is stopped, against the applied state it left in its data dir.
import { readFile, writeFile } from 'node:fs/promises';
import path from 'node:path';
import t from 'tap';
import { freePort, runCli, startServer, waitFor } from '../helpers/server.ts';

const BASE = { user: [{ login: 'alice', password: 'pw' }] };

t.test('plan against a running server, then against the data dir when it is gone', async (t) => {
  const srv = await startServer(t, { config: BASE });
  const dir = srv.dir;
  const same = srv.configPath!;
  const changed = path.join(dir, 'changed.json');
  // The same ports as the running config, one user more, one password changed.
  const running = JSON.parse(await readFile(same, 'utf8'));
  await writeFile(
    changed,
    JSON.stringify({
      ...running,
      user: [
        { login: 'alice', password: 'new' },
        { login: 'bob', password: 'pw', role: 'admin' },
      ],
    }),
  );

  const none = await runCli(['reconcile', '--plan', '--config', same, '--server', srv.url]);
  t.equal(none.code, 0, none.stderr);
  t.match(none.stdout, /No changes/);

  const some = await runCli(['reconcile', '--plan', '--config', changed, '--server', srv.url]);
  t.equal(some.code, 2, some.stderr);
  t.match(some.stdout, /\+ user "bob"/);
  t.match(some.stdout, /~ user "alice"/);
  t.match(some.stdout, /Plan: 1 to add, 1 to change, 0 to replace, 0 to destroy\./);
  t.notMatch(some.stdout, /"new"/, 'the password is masked');

  const json = await runCli([
    'reconcile',
    '--plan',
    '--json',
    '--config',
    changed,
    '--server',
    srv.url,
  ]);
  t.equal(json.code, 2);
  const plan = JSON.parse(json.stdout);
  t.match(plan, { format: 'sluice-plan/1', changed: true, summary: { add: 1, change: 1 } });

  const bad = path.join(dir, 'bad.json');
  await writeFile(bad, '{\n  "user": [ { "login": "x" } ]\n}\n');
  const invalid = await runCli(['reconcile', '--plan', '--config', bad, '--server', srv.url]);
  t.equal(invalid.code, 1);
  t.match(invalid.stderr, /bad\.json:2:\d+: error \[required\] \/user\/0\/password/);

  // An explicit --server that does not answer is an error, not a silent fallback.
  const nowhere = `http://127.0.0.1:${await freePort()}`;
  const down = await runCli(['reconcile', '--plan', '--config', same, '--server', nowhere]);
  t.equal(down.code, 1);
  t.match(down.stderr, /cannot reach/);

  // With the server stopped, the default address falls back to the state in the data dir.
  t.match(await srv.stop(), { code: 0 }, 'SIGTERM closes the server cleanly (exit 0)');
  const env = { SLUICE_SERVER: nowhere };
  const offSame = await runCli(
    ['reconcile', '--plan', '--config', same, '--data-dir', srv.dataDir],
    { env },
  );
  t.equal(offSame.code, 0, offSame.stdout + offSame.stderr);
  t.match(offSame.stderr, /comparing with .*applied/);
  const offChanged = await runCli(
    ['reconcile', '--plan', '--config', changed, '--data-dir', srv.dataDir],
    { env },
  );
  t.equal(offChanged.code, 2);
  t.match(offChanged.stdout, /\+ user "bob"/);
});

t.test('a fixed field change is reported at its line in the file given', async (t) => {
  const srv = await startServer(t, { config: BASE });
  const running = JSON.parse(await readFile(srv.configPath!, 'utf8'));
  const archive = path.join(srv.dir, 'archive');
  const storage = { id: 1, name: 's', 'dir-path': archive };
  const withStorage = { ...running, 'dvr-storage-list': { storage: [storage] } };
  await writeFile(srv.configPath!, `${JSON.stringify(withStorage, null, 2)}\n`);
  await waitFor('the storage applied', async () => {
    const st = (await (await fetch(`${srv.url}/data/status`)).json()) as {
      resources: Array<{ kind: string }>;
    };
    return st.resources.some((r) => r.kind === 'storage') || undefined;
  });
  const moved = path.join(srv.dir, 'moved.json');
  const doc = {
    ...withStorage,
    'dvr-storage-list': { storage: [{ ...storage, 'dir-path': '/x' }] },
  };
  const text = `${JSON.stringify(doc, null, 2)}\n`;
  await writeFile(moved, text);
  const line = text.split('\n').findIndex((l) => l.includes('"/x"')) + 1;
  const want = new RegExp(
    `moved\\.json:${line}:\\d+: error \\[fixed\\] /dvr-storage-list/storage/0/dir-path: .*dir-path cannot change`,
  );
  const online = await runCli(['reconcile', '--plan', '--config', moved, '--server', srv.url]);
  t.equal(online.code, 1);
  t.match(online.stderr, want);
  t.notMatch(online.stderr, /^http\S*: error/m, 'labelled with the file, not the server URL');

  await srv.stop();
  const offline = await runCli(
    ['reconcile', '--plan', '--config', moved, '--data-dir', srv.dataDir],
    { env: { SLUICE_SERVER: `http://127.0.0.1:${await freePort()}` } },
  );
  t.equal(offline.code, 1);
  t.match(offline.stderr, want);
});
