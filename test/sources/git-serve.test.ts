// `sluice serve --git` end to end: the real server follows a local bare repository. A pushed
// commit applies within one poll, a bad commit is refused (shown in /data/status and by
// `reconcile --plan --git`), the next good one applies; an API edit is a pushed commit; a
// rejected push answers 409 and leaves everything as it was.
import t from 'tap';
import { git, makeRepo } from '../helpers/git.ts';
import { freePort, loopbackServers, runCli, startServer, waitFor } from '../helpers/server.ts';

const POLL_SEC = 1;
/** One poll interval plus the fetch, checkout and apply on a busy 2-core machine. */
const WITHIN_ONE_POLL_MS = POLL_SEC * 1000 + 6_000;

type Status = { source: Record<string, unknown>; lastError?: { origin: string } };

function text(doc: unknown): string {
  return `${JSON.stringify(doc, null, 2)}\n`;
}

t.test('serve --git follows the branch, refuses a bad commit, commits API edits', async (t) => {
  const repo = await makeRepo(t);
  const port = await freePort();
  const base = loopbackServers(
    { user: [{ login: 'alice', password: 'pw' }] },
    port,
    await freePort(),
  );
  const first = await repo.push(text(base), 'first');
  const srv = await startServer(t, { port, args: ['--git', repo.url, '--poll', String(POLL_SEC)] });
  const status = async (): Promise<Status> =>
    (await (await fetch(`${srv.url}/data/status`)).json()) as Status;

  const s0 = await status();
  t.match(s0.source, { type: 'git', url: repo.url, branch: 'main', path: 'config.json' });
  t.equal(s0.source['appliedCommit'], first);

  // A good commit applies within one poll interval.
  const withBob = { ...base, user: [...(base.user as object[]), { login: 'bob', password: 'pw' }] };
  const second = await repo.push(text(withBob), 'add bob');
  await waitFor(
    'the second commit applied',
    async () => ((await status()).source['appliedCommit'] === second ? true : undefined),
    WITHIN_ONE_POLL_MS,
  );
  const users = (await (await fetch(`${srv.url}/config/user`)).json()) as Array<{ login: string }>;
  t.same(
    users.map((u) => u.login),
    ['alice', 'bob'],
  );

  // A bad commit is refused, shown in /data/status, and the last good one keeps running.
  const bad = await repo.push(text({ ...withBob, user: [{ login: 'carol' }] }), 'break it');
  const refused = await waitFor(
    'the bad commit reported',
    async () => {
      const s = await status();
      const err = s.source['lastError'] as { origin?: string } | null;
      return err?.origin === `git:${bad}` ? s : undefined;
    },
    WITHIN_ONE_POLL_MS,
  );
  t.equal(refused.source['head'], bad);
  t.equal(refused.source['appliedCommit'], second, 'still on the last good commit');
  t.match(refused.lastError, { origin: `git:${bad}` }, "the loop's last error names the commit");
  const stillBob = (await (await fetch(`${srv.url}/config/user`)).json()) as unknown[];
  t.equal(stillBob.length, 2);

  // reconcile --plan on the branch head says why, exit 1.
  const plan = await runCli(['reconcile', '--plan', '--git', repo.url, '--server', srv.url]);
  t.equal(plan.code, 1);
  t.match(plan.stderr, /error \[required\] \/user\/0\/password/);
  t.match(plan.stderr, new RegExp(`commit ${bad}`));

  // API edits are refused while the branch head is invalid (they would drop the pushed text).
  const blocked = await fetch(`${srv.url}/config/user/alice`, {
    method: 'PATCH',
    headers: { 'content-type': 'application/merge-patch+json' },
    body: JSON.stringify({ password: 'x' }),
  });
  t.equal(blocked.status, 409);

  // The next good commit applies.
  const fixed = await repo.push(text(base), 'fix it');
  await waitFor(
    'the fixed commit applied',
    async () => {
      const s = await status();
      return s.source['appliedCommit'] === fixed && s.source['lastError'] === null ? s : undefined;
    },
    WITHIN_ONE_POLL_MS,
  );

  // An API edit is a commit on top of the remote head, pushed.
  const res = await fetch(`${srv.url}/config/user/alice`, {
    method: 'PATCH',
    headers: { 'content-type': 'application/merge-patch+json' },
    body: JSON.stringify({ password: 'changed' }),
  });
  t.equal(res.status, 200, await res.clone().text());
  const body = (await res.json()) as { commit: string; etag: string };
  t.equal(await repo.remoteHead(), body.commit, 'pushed');
  t.equal(await git(repo.bare, 'rev-parse', `${body.commit}^`), fixed);
  t.match(await git(repo.bare, 'log', '-1', '--format=%s', 'main'), /alice/, 'message names it');
  t.match(await repo.remoteFile(), /"changed"/);
  t.equal((await status()).source['appliedCommit'], body.commit);

  // A rejected push: 409, the remote, the config and the ETag stay as they were.
  await repo.rejectPushes(true);
  const before = await fetch(`${srv.url}/config`);
  const etag = before.headers.get('etag');
  const rejected = await fetch(`${srv.url}/config/user/alice`, {
    method: 'PATCH',
    headers: { 'content-type': 'application/merge-patch+json' },
    body: JSON.stringify({ password: 'never' }),
  });
  t.equal(rejected.status, 409);
  t.match(((await rejected.json()) as { message: string }).message, /rejected/);
  t.equal(await repo.remoteHead(), body.commit, 'the remote did not move');
  const after = await fetch(`${srv.url}/config`);
  t.equal(after.headers.get('etag'), etag, 'the config is unchanged');
  t.notMatch(await after.text(), /never/);
  await repo.rejectPushes(false);
});
