// The Terraform flow in file mode, as an operator runs it: `reconcile --plan --out` saves the
// plan (owner-only, secrets masked in the plan shown), `reconcile --apply` applies exactly that
// plan through the API, and refuses, applying nothing, once the running config has moved on.
import { readFile, stat, writeFile } from 'node:fs/promises';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import path from 'node:path';
import t, { type Test } from 'tap';
import { PLAN_FILE_FORMAT, type PlanFile, writePlanFile } from '../../src/cli/plan-file.ts';
import { freePort, runCli, startServer, tempDir } from '../helpers/server.ts';

const BASE = { user: [{ login: 'alice', password: 'pw' }] };

async function configOf(url: string): Promise<{ doc: Record<string, unknown>; etag: string }> {
  const res = await fetch(`${url}/config`);
  return { doc: (await res.json()) as Record<string, unknown>, etag: res.headers.get('etag')! };
}

t.test('plan --out, then --apply applies exactly that plan; a stale plan is refused', async (t) => {
  const srv = await startServer(t, { config: BASE });
  const running = JSON.parse(await readFile(srv.configPath!, 'utf8'));
  const desired = path.join(srv.dir, 'new.json');
  const planFile = path.join(srv.dir, 'plan.json');
  await writeFile(
    desired,
    `${JSON.stringify(
      {
        ...running,
        user: [
          { login: 'alice', password: 'secret-new' },
          { login: 'bob', password: 'pw', role: 'admin' },
        ],
      },
      null,
      2,
    )}\n`,
  );
  const before = await configOf(srv.url);

  const planned = await runCli([
    'reconcile',
    '--plan',
    '--config',
    desired,
    '--server',
    srv.url,
    '--out',
    planFile,
  ]);
  t.equal(planned.code, 2, planned.stderr);
  t.match(planned.stdout, /\+ user "bob"/);
  t.match(planned.stderr, /plan saved to .*plan\.json.*sluice reconcile --apply/);
  t.equal((await stat(planFile)).mode & 0o777, 0o600, 'the plan file is owner-only');
  const saved = JSON.parse(await readFile(planFile, 'utf8'));
  t.match(saved, {
    format: 'sluice-plan-file/1',
    server: srv.url,
    from: desired,
    etag: before.etag,
    plan: { format: 'sluice-plan/1', summary: { add: 1, change: 1 } },
  });
  t.notMatch(JSON.stringify(saved.plan), /secret-new/, 'the plan shown masks the secret');
  t.equal(saved.config.user[0].password, 'secret-new', 'the config to apply keeps it');
  t.same(await configOf(srv.url), before, 'planning changes nothing');

  const applied = await runCli(['reconcile', '--apply', planFile]);
  t.equal(applied.code, 0, applied.stderr);
  t.match(applied.stdout, /Applied .*plan\.json .*1 added, 1 changed, 0 replaced, 0 destroyed/);
  const after = await configOf(srv.url);
  t.not(after.etag, before.etag);
  t.same(
    (after.doc['user'] as Array<{ login: string }>).map((u) => u.login),
    ['alice', 'bob'],
    'the running config is the planned one',
  );
  t.match(await readFile(srv.configPath!, 'utf8'), /"bob"/, 'and so is the file');

  // The same plan again: the config it was made against is gone.
  const again = await runCli(['reconcile', '--apply', planFile]);
  t.equal(again.code, 1);
  t.match(again.stderr, /refused to apply .*: the running config changed since this plan was made/);
  t.match(again.stderr, /Nothing was applied: make a new plan/);

  // A plan made, then someone else edits the running config: refused, nothing applied.
  const third = path.join(srv.dir, 'third.json');
  const thirdPlan = path.join(srv.dir, 'third-plan.json');
  await writeFile(
    third,
    JSON.stringify({ ...after.doc, user: [{ login: 'carol', password: 'x' }] }),
  );
  const p3 = await runCli(['reconcile', '--plan', '--config', third, '--out', thirdPlan], {
    env: { SLUICE_SERVER: srv.url },
  });
  t.equal(p3.code, 2, `${p3.stdout}${p3.stderr}`);
  const edit = await fetch(`${srv.url}/config/user/bob`, {
    method: 'PATCH',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ role: 'viewer' }),
  });
  t.equal(edit.status, 200);
  const edited = await configOf(srv.url);
  const refused = await runCli(['reconcile', '--apply', thirdPlan]);
  t.equal(refused.code, 1);
  t.match(
    refused.stderr,
    `the running config changed since this plan was made (it was made against ${after.etag}; the server now has ${edited.etag})`,
  );
  t.same(await configOf(srv.url), edited, 'nothing was applied');
});

t.test(
  '--apply refuses a plan file whose shown plan is not what the config would do',
  async (t) => {
    const srv = await startServer(t, { config: BASE });
    const running = JSON.parse(await readFile(srv.configPath!, 'utf8'));
    const desired = path.join(srv.dir, 'new.json');
    const planFile = path.join(srv.dir, 'plan.json');
    await writeFile(desired, JSON.stringify({ ...running, user: [] }));
    const planned = await runCli(['reconcile', '--plan', '--config', desired, '--out', planFile], {
      env: { SLUICE_SERVER: srv.url },
    });
    t.equal(planned.code, 2, planned.stderr);
    // Shown: destroy alice. Edited afterwards to apply something else: refused.
    const saved = JSON.parse(await readFile(planFile, 'utf8'));
    saved.config.user = [{ login: 'mallory', password: 'm', role: 'admin' }];
    await writeFile(planFile, JSON.stringify(saved), { mode: 0o600 });
    const before = await configOf(srv.url);
    const r = await runCli(['reconcile', '--apply', planFile]);
    t.equal(r.code, 1);
    t.match(r.stderr, /the plan of this config is no longer the one saved/);
    t.same(await configOf(srv.url), before, 'nothing was applied');
  },
);

t.test('a plan without changes applies nothing; --out needs a server; bad usage', async (t) => {
  const srv = await startServer(t, { config: BASE });
  const planFile = path.join(srv.dir, 'plan.json');
  const same = await runCli([
    'reconcile',
    '--plan',
    '--config',
    srv.configPath!,
    '--server',
    srv.url,
    '--out',
    planFile,
  ]);
  t.equal(same.code, 0, same.stderr);
  const nothing = await runCli(['reconcile', '--apply', planFile]);
  t.equal(nothing.code, 0, nothing.stderr);
  t.match(nothing.stdout, /No changes\. Nothing to apply\./);

  const nowhere = `http://127.0.0.1:${await freePort()}`;
  const offline = await runCli(
    [
      'reconcile',
      '--plan',
      '--config',
      srv.configPath!,
      '--data-dir',
      srv.dataDir,
      '--out',
      planFile,
    ],
    { env: { SLUICE_SERVER: nowhere } },
  );
  t.equal(offline.code, 1);
  t.match(offline.stderr, /--out needs a running server/);

  const both = await runCli(['reconcile', '--plan', '--apply', planFile]);
  t.equal(both.code, 1);
  t.match(both.stderr, /give --plan or --apply, not both/);
  const notAPlan = await runCli(['reconcile', '--apply', srv.configPath!]);
  t.equal(notAPlan.code, 1);
  t.match(notAPlan.stderr, /is not a plan file/);
});

/** A stand-in admin API: answers the dry run and the write as told, and GET /config's ETag. */
async function fakeServer(
  t: Test,
  answer: (dryRun: boolean, ifMatch: string | undefined) => [number, unknown],
  currentEtag: string,
): Promise<{ url: string; writes: number; writeIfMatch: string | undefined }> {
  const state = { url: '', writes: 0, writeIfMatch: undefined as string | undefined };
  const srv = http.createServer((req, res) => {
    req.resume();
    req.on('end', () => {
      if (req.method === 'GET' && req.url === '/config') {
        res.writeHead(200, { 'content-type': 'application/json', etag: currentEtag }).end('{}');
        return;
      }
      const dryRun = req.url?.includes('dry-run=true') ?? false;
      if (!dryRun) {
        state.writes++;
        state.writeIfMatch = req.headers['if-match'];
      }
      const [status, body] = answer(dryRun, req.headers['if-match']);
      res.writeHead(status, { 'content-type': 'application/json' }).end(JSON.stringify(body));
    });
  });
  await new Promise<void>((resolve) => srv.listen(0, '127.0.0.1', resolve));
  t.teardown(() => new Promise((resolve) => srv.close(resolve)));
  state.url = `http://127.0.0.1:${(srv.address() as AddressInfo).port}`;
  return state;
}

const SHOWN = {
  format: 'sluice-plan/1',
  changed: true,
  summary: { add: 1, change: 0, replace: 0, destroy: 0, unchanged: 0 },
  changes: [{ kind: 'user', key: 'bob', name: 'bob', action: 'create', fields: [] }],
};

async function planFileFor(t: Test, server: string): Promise<string> {
  const file = path.join(await tempDir(t), 'plan.json');
  const plan: PlanFile = {
    format: PLAN_FILE_FORMAT,
    createdAt: new Date().toISOString(),
    server,
    from: 'new.json',
    etag: '"old"',
    plan: SHOWN,
    config: { user: [{ login: 'bob', password: 'pw' }] },
  };
  await writePlanFile(file, plan);
  return file;
}

t.test('--apply: a 412 on the dry run or on the write is the same refusal', async (t) => {
  // A server that checks If-Match on dry runs too.
  const strict = await fakeServer(
    t,
    (dryRun, ifMatch) =>
      ifMatch === '"new"'
        ? [200, { etag: '"new"', plan: SHOWN, dryRun }]
        : [412, { status: 412, message: 'If-Match does not match' }],
    '"new"',
  );
  const r1 = await runCli(['reconcile', '--apply', await planFileFor(t, strict.url)]);
  t.equal(r1.code, 1);
  t.match(
    r1.stderr,
    'the running config changed since this plan was made (it was made against "old"; the server now has "new")',
  );
  t.equal(strict.writes, 0, 'no write was tried');

  // The config changes between the dry run and the write: the write's If-Match refuses it.
  const racing = await fakeServer(
    t,
    (dryRun) =>
      dryRun
        ? [200, { etag: '"old"', plan: SHOWN, dryRun: true }]
        : [412, { status: 412, message: 'If-Match does not match' }],
    '"newer"',
  );
  const r2 = await runCli(['reconcile', '--apply', await planFileFor(t, racing.url)]);
  t.equal(r2.code, 1);
  t.match(r2.stderr, 'made against "old"; the server now has "newer")');
  t.equal(racing.writes, 1);
  t.equal(racing.writeIfMatch, '"old"', 'the write carries the ETag the plan was made against');
});
