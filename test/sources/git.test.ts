// The git source against a real local bare repository: a pushed commit applies within one poll
// interval, a bad commit is refused and reported while the last good one keeps running, the
// next good commit applies; API edits become pushed commits; a rejected push is undone (409).
import { readFile, rm } from 'node:fs/promises';
import path from 'node:path';
import pino from 'pino';
import t, { type Test } from 'tap';
import { GitSource, readGitConfigOnce } from '../../src/config/git.ts';
import { ConfigServiceImpl } from '../../src/config/service.ts';
import { silentLogger } from '../../src/log.ts';
import { systemClock } from '../../src/util/clock.ts';
import { git, makeRepo } from '../helpers/git.ts';
import { tempDir } from '../helpers/server.ts';
import { RecordingSink } from '../helpers/sink.ts';

const POLL_SEC = 1;
/** Slack on top of one poll interval for the fetch and checkout on a busy machine. */
const POLL_SLACK_MS = 6_000;

function users(...logins: string[]): string {
  return `${JSON.stringify({ user: logins.map((login) => ({ login, password: 'pw' })) }, null, 2)}\n`;
}

async function setup(t: Test) {
  const repo = await makeRepo(t);
  const first = await repo.push(users('alice'), 'first');
  const dataDir = await tempDir(t);
  const sink = new RecordingSink();
  const source = new GitSource({
    url: repo.url,
    branch: 'main',
    path: 'config.json',
    pollSec: POLL_SEC,
    dataDir,
    clock: systemClock,
    log: silentLogger,
  });
  const service = new ConfigServiceImpl({
    loop: sink,
    persister: source,
    log: silentLogger,
    source: `git:${repo.url}`,
    info: () => source.info(),
  });
  source.attach(service);
  t.teardown(() => source.close());
  await source.init();
  t.equal(await source.start(), 'applied', 'the first poll applies the head');
  return { repo, first, sink, source, service, dataDir };
}

t.test(
  'good commit applies within one poll; a bad one is refused; the next good one applies',
  async (t) => {
    const { repo, first, sink, source } = await setup(t);
    await sink.until('first submit', () => sink.submits.length === 1);
    t.equal(sink.submits[0]!.origin, `git:${first}`);
    t.equal(source.info()['appliedCommit'], first);

    const pushedAt = Date.now();
    const second = await repo.push(users('alice', 'bob'), 'add bob');
    await sink.until(
      'the second commit',
      () => sink.submits.length === 2,
      POLL_SEC * 1000 + POLL_SLACK_MS,
    );
    t.ok(
      Date.now() - pushedAt <= POLL_SEC * 1000 + POLL_SLACK_MS,
      'applied within one poll interval',
    );
    t.equal(sink.submits[1]!.origin, `git:${second}`);
    t.ok(sink.submits[1]!.desired.resources.has('user/bob'));
    t.equal(source.info()['appliedCommit'], second);

    const bad = await repo.push('{ "user": [ { "login": 7 } ] }\n', 'break it');
    await sink.until(
      'the bad commit reported',
      () => sink.invalid.length === 1,
      POLL_SEC * 1000 + POLL_SLACK_MS,
    );
    t.equal(sink.invalid[0]!.origin, `git:${bad}`, 'the report names the commit');
    t.ok(
      sink.invalid[0]!.issues.some((i) => i.pointer.startsWith('/user/0')),
      'with a pointer',
    );
    const info = source.info();
    t.equal(info['head'], bad);
    t.equal(info['appliedCommit'], second, 'the last good commit stays applied');
    t.match(info['lastError'], { origin: `git:${bad}` });
    // A later poll that finds the refused head where it was must not take it as applied.
    await source.poll(); // may join the timer's poll in progress
    t.equal(await source.poll(), 'unchanged');
    t.equal(source.info()['appliedCommit'], second, 'still the last good commit after a poll');
    t.equal(sink.submits.length, 2, 'nothing submitted for the bad commit');

    const fixed = await repo.push(users('carol'), 'fix it');
    await sink.until(
      'the fixed commit',
      () => sink.submits.length === 3,
      POLL_SEC * 1000 + POLL_SLACK_MS,
    );
    t.equal(sink.submits[2]!.origin, `git:${fixed}`);
    t.equal(source.info()['appliedCommit'], fixed);
    t.equal(source.info()['lastError'], null);
  },
);

t.test('an API edit is a commit pushed to the remote', async (t) => {
  const { repo, first, sink, service, source } = await setup(t);
  const result = await service.edit(
    (d) => ({ ...d, user: [...(d['user'] as object[]), { login: 'dave', password: 'pw' }] }),
    { message: 'config: create user "dave"' },
  );
  t.ok(result.commit, 'the edit names its commit');
  t.equal(await repo.remoteHead(), result.commit, 'pushed to the remote branch');
  t.equal(await git(repo.bare, 'log', '-1', '--format=%s', 'main'), 'config: create user "dave"');
  t.equal(
    await git(repo.bare, 'rev-parse', `${result.commit}^`),
    first,
    'on top of the remote head',
  );
  t.equal(await repo.remoteFile(), service.current().text, 'the minimal text is what was pushed');
  t.match(await repo.remoteFile(), /dave/);
  await sink.until('the edit submitted', () =>
    sink.submits.some((s) => s.origin === `api:${result.commit}`),
  );
  t.equal(source.info()['appliedCommit'], result.commit);
  // The next poll sees its own commit as the head and does not apply it again.
  const before = sink.submits.length;
  t.equal(await source.poll(), 'unchanged');
  t.equal(sink.submits.length, before);
});

t.test('a rejected push answers 409 and undoes the edit', async (t) => {
  const { repo, first, service, source, dataDir } = await setup(t);
  const before = service.current();
  await repo.rejectPushes(true);
  await t.rejects(
    service.edit((d) => ({ ...d, user: [] }), { message: 'config: delete users' }),
    { status: 409, code: 'CONFLICT' },
  );
  t.equal(await repo.remoteHead(), first, 'the remote did not move');
  const clone = path.join(dataDir, 'git-clone');
  t.equal(await git(clone, 'rev-parse', 'HEAD'), first, 'the local commit is gone');
  t.equal(await readFile(path.join(clone, 'config.json'), 'utf8'), users('alice'), 'file restored');
  t.equal(service.current().etag, before.etag, 'the current config is unchanged');
  t.equal(source.info()['appliedCommit'], first);

  await repo.rejectPushes(false);
  const ok = await service.edit((d) => ({ ...d, user: [] }), { message: 'config: delete users' });
  t.equal(await repo.remoteHead(), ok.commit, 'once the remote accepts, the edit goes through');
});

t.test(
  'a remote that cannot be fetched is shown as the last error; the config stays',
  async (t) => {
    const { repo, sink, source, service } = await setup(t);
    await sink.until('first submit', () => sink.submits.length === 1);
    const etag = service.current().etag;
    await rm(repo.bare, { recursive: true, force: true });
    await source.poll(); // may join the timer's poll in progress
    t.equal(await source.poll(), 'unchanged');
    t.match(source.info()['lastError'], { origin: 'fetch', message: /remote\.git|repository/ });
    t.equal(service.current().etag, etag);
    t.equal(sink.submits.length, 1);
  },
);

t.test('another branch and a config path in a subfolder', async (t) => {
  const repo = await makeRepo(t, 'prod');
  const commit = await repo.push(users('erin'), 'prod config', 'env/prod/config.json');
  const once = await readGitConfigOnce(repo.url, 'prod', 'env/prod/config.json');
  t.same(once, { text: users('erin'), commit });
  const sink = new RecordingSink();
  const source = new GitSource({
    url: repo.url,
    branch: 'prod',
    path: 'env/prod/config.json',
    dataDir: await tempDir(t),
    clock: systemClock,
    log: silentLogger,
  });
  const service = new ConfigServiceImpl({
    loop: sink,
    persister: source,
    log: silentLogger,
    source: repo.url,
    info: () => source.info(),
  });
  source.attach(service);
  t.teardown(() => source.close());
  await source.init();
  t.equal(await source.poll(), 'applied');
  await sink.until('submit', () => sink.submits.length === 1);
  t.ok(sink.submits[0]!.desired.resources.has('user/erin'));
  const edit = await service.edit((d) => ({ ...d, user: [] }), { message: 'config: no users' });
  t.equal(await repo.remoteHead('prod'), edit.commit);
  t.same(JSON.parse(await repo.remoteFile('env/prod/config.json', 'prod')), { user: [] });
});

t.test('an empty remote starts as {}; the first edit creates the branch', async (t) => {
  const repo = await makeRepo(t);
  const sink = new RecordingSink();
  const source = new GitSource({
    url: repo.url,
    dataDir: await tempDir(t),
    clock: systemClock,
    log: silentLogger,
  });
  const service = new ConfigServiceImpl({
    loop: sink,
    persister: source,
    log: silentLogger,
    source: repo.url,
    info: () => source.info(),
  });
  source.attach(service);
  t.teardown(() => source.close());
  await source.init();
  t.equal(await source.poll(), 'applied');
  t.same(service.current().doc, {});
  t.equal(source.info()['head'], null);
  const edit = await service.edit((d) => ({ ...d, user: [{ login: 'x', password: 'y' }] }), {
    message: 'config: create user "x"',
  });
  t.equal(await repo.remoteHead(), edit.commit, 'the branch exists now');
  t.equal(await source.poll(), 'unchanged');
  t.notOk(source.info()['warning'], 'an empty remote is no cause for a warning');
});

t.test(
  'a branch missing from a remote that has others is warned about (likely a typo)',
  async (t) => {
    const repo = await makeRepo(t);
    await repo.push(users('alice'), 'first');
    const warnings: string[] = [];
    const log = pino({ level: 'warn' }, { write: (s: string) => warnings.push(JSON.parse(s).msg) });
    const source = new GitSource({
      url: repo.url,
      branch: 'mian',
      dataDir: await tempDir(t),
      clock: systemClock,
      log,
    });
    const service = new ConfigServiceImpl({
      loop: new RecordingSink(),
      persister: source,
      log: silentLogger,
      source: repo.url,
      info: () => source.info(),
    });
    source.attach(service);
    t.teardown(() => source.close());
    await source.init();
    t.equal(await source.poll(), 'applied', 'runs an empty config meanwhile');
    const want = /^branch mian does not exist at .* \(it has main\); running an empty config/;
    t.match(source.info()['warning'], want, 'shown in /data/status');
    await source.poll();
    t.equal(warnings.filter((w) => want.test(w)).length, 1, 'logged once, not every poll');
  },
);
