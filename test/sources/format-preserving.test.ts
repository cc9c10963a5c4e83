// API edits keep the operator's layout, end to end with the real server: in git mode each edit
// is a commit whose `git show --numstat` is a line or two, in file mode the file's diff is the
// same; the text still validates and stays minimal.
import { readFile, writeFile } from 'node:fs/promises';
import path from 'node:path';
import t, { type Test } from 'tap';
import { deepEqual } from '../../src/config/defaults.ts';
import { elideDefaults, loadConfigText } from '../../src/config/store.ts';
import { git, gitRaw, makeRepo } from '../helpers/git.ts';
import { freePort, startServer, tempDir } from '../helpers/server.ts';

/** Compact lines, tabs and spaces mixed, members on one line and on lines of their own. */
function handFormatted(port: number, epgPort: number): string {
  return `{
  "http-server": {"port": ${port}, "bind-address": "127.0.0.1"},
  "epg-server": { "port":${epgPort}, "bind-address":"127.0.0.1" },
\t"user": [
\t  {"login": "alice", "password": "pw", "role": "admin"},
\t  { "login":"bob","password":"pw2" }
\t],
  "stream": [
    {
       "id": 2,
       "stream-name": "sport",
       "pause": false
    }
  ]
}
`;
}

async function send(url: string, method: string, body?: unknown): Promise<Response> {
  const res = await fetch(url, {
    method,
    headers: body === undefined ? {} : { 'content-type': 'application/merge-patch+json' },
    ...(body === undefined ? {} : { body: JSON.stringify(body) }),
  });
  await res.arrayBuffer();
  return res;
}

/** Lines [added, removed] of the last commit on the remote's main. */
async function lastCommitStat(bare: string): Promise<[number, number]> {
  const out = await git(bare, 'show', '--numstat', '--format=', 'main');
  const [added, removed] = out.split(/\s+/).map(Number);
  return [added!, removed!];
}

function checkText(t: Test, text: string): void {
  const loaded = loadConfigText(text);
  t.ok(deepEqual(elideDefaults(loaded.doc), loaded.doc), 'the text is still minimal');
}

t.test('git mode: every API edit is a commit of a line or two', async (t) => {
  const repo = await makeRepo(t);
  const port = await freePort();
  const original = handFormatted(port, await freePort());
  checkText(t, original);
  await repo.push(original, 'hand-written');
  const srv = await startServer(t, { port, args: ['--git', repo.url, '--poll', '30'] });

  const patch = await send(`${srv.url}/config/user/bob`, 'PATCH', { role: 'admin' });
  t.equal(patch.status, 200);
  t.same(await lastCommitStat(repo.bare), [1, 1], 'one member: a one-line diff');
  const afterPatch = await repo.remoteFile();
  t.match(afterPatch, '\t  { "login":"bob","password":"pw2","role":"admin" }\n');
  checkText(t, afterPatch);

  const stream = await send(`${srv.url}/config/stream/2`, 'PATCH', { 'ott-hls': 1 });
  t.equal(stream.status, 200);
  const [added, removed] = await lastCommitStat(repo.bare);
  t.ok(added <= 2 && removed <= 1, `a member added to a record over lines: +${added} -${removed}`);

  const del = await send(`${srv.url}/config/user/alice`, 'DELETE');
  t.equal(del.status, 200);
  t.same(await lastCommitStat(repo.bare), [0, 1], 'a record removed: its line');

  const post = await fetch(`${srv.url}/config/user`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ login: 'carol', password: 'x' }),
  });
  t.equal(post.status, 201);
  t.same(await lastCommitStat(repo.bare), [2, 1], 'a record added: its line and a comma');
  const final = await repo.remoteFile();
  checkText(t, final);
  t.match(final, '  "epg-server": { "port":', 'untouched lines are as they were');
  const log = await gitRaw(repo.bare, 'log', '--format=%s', 'main');
  t.match(log, /api: create user carol/);
});

t.test('file mode: the file keeps its layout', async (t) => {
  const dir = await tempDir(t);
  const port = await freePort();
  const file = path.join(dir, 'config.json');
  const original = handFormatted(port, await freePort());
  await writeFile(file, original);
  const srv = await startServer(t, { port, configPath: file });

  const res = await send(`${srv.url}/config/http-server`, 'PATCH', { realm: 'tv' });
  t.equal(res.status, 200);
  const text = await readFile(file, 'utf8');
  const changed = text.split('\n').filter((l) => !original.split('\n').includes(l));
  t.same(changed, [
    `  "http-server": {"port": ${port}, "bind-address": "127.0.0.1", "realm": "tv"},`,
  ]);
  t.equal(text.split('\n').length, original.split('\n').length);
  checkText(t, text);
});

t.test('a refused dry run points into the file as the operator wrote it', async (t) => {
  const dir = await tempDir(t);
  const port = await freePort();
  const file = path.join(dir, 'config.json');
  const original = handFormatted(port, await freePort());
  await writeFile(file, original);
  const srv = await startServer(t, { port, configPath: file });
  // `ott-hls` true is a type error: where is it in the text that would be written?
  const res = await fetch(`${srv.url}/config/stream/2?dry-run=true`, {
    method: 'PATCH',
    headers: { 'content-type': 'application/merge-patch+json' },
    body: JSON.stringify({ 'ott-hls': true }),
  });
  t.equal(res.status, 400);
  const body = (await res.json()) as { errors?: { line?: number; pointer?: string }[] };
  const err = body.errors?.find((e) => e.pointer === '/stream/0/ott-hls');
  t.ok(err, 'the error names the member');
  // In the hand-formatted file the stream record spans lines 8–12 and the new member follows
  // its last line; in a 2-space rewrite it would sit further down (after the users' lines).
  const lines = original.split('\n');
  const pauseLine = lines.findIndex((l) => l.includes('"pause": false')) + 1;
  t.ok(
    err?.line !== undefined && err.line >= pauseLine && err.line <= pauseLine + 1,
    `line ${err?.line} is beside "pause" (line ${pauseLine}) as in the operator's layout`,
  );
  t.equal(await readFile(file, 'utf8'), original, 'a dry run writes nothing');
});
