// The file source with real files and a real chokidar watch: edits in place and editors'
// rename-on-save are applied, our own writes and no-op saves are not applied twice, an invalid
// file is refused and reported while the last good config stays.
import { readFile, rename, writeFile } from 'node:fs/promises';
import path from 'node:path';
import t, { type Test } from 'tap';
import { ConfigServiceImpl, type RefreshOutcome } from '../../src/config/service.ts';
import { FilePersister, FileWatcher } from '../../src/config/watch.ts';
import { silentLogger } from '../../src/log.ts';
import { systemClock } from '../../src/util/clock.ts';
import { tempDir } from '../helpers/server.ts';
import { RecordingSink } from '../helpers/sink.ts';

const DEBOUNCE_MS = 50;

function doc(users: string[]): string {
  return `${JSON.stringify({ user: users.map((login) => ({ login, password: 'pw' })) }, null, 2)}\n`;
}

async function setup(t: Test) {
  const dir = await tempDir(t);
  const file = path.join(dir, 'config.json');
  await writeFile(file, doc(['alice']));
  const sink = new RecordingSink();
  const service = new ConfigServiceImpl({
    loop: sink,
    persister: new FilePersister(file),
    log: silentLogger,
    source: file,
    info: () => ({ type: 'file', path: file }),
  });
  const outcomes: RefreshOutcome[] = [];
  const refreshed: Array<() => void> = [];
  const watcher = new FileWatcher({
    file,
    service,
    clock: systemClock,
    log: silentLogger,
    debounceMs: DEBOUNCE_MS,
    onRefresh: (o) => {
      outcomes.push(o);
      for (const fn of refreshed.splice(0)) fn();
    },
  });
  t.teardown(() => watcher.close());
  await watcher.refresh(true);
  await watcher.start();
  /** Resolves at the next refresh the watcher makes on its own. */
  const nextRefresh = (timeoutMs = 5_000) =>
    new Promise<RefreshOutcome>((resolve, reject) => {
      const timer = setTimeout(() => reject(new Error('no refresh')), timeoutMs);
      refreshed.push(() => {
        clearTimeout(timer);
        resolve(outcomes[outcomes.length - 1]!);
      });
    });
  return { dir, file, sink, service, watcher, outcomes, nextRefresh };
}

t.test('initial load submits the file once', async (t) => {
  const { sink, service } = await setup(t);
  await sink.until('first submit', () => sink.submits.length === 1);
  t.equal(sink.submits[0]!.origin, 'file');
  t.ok(sink.submits[0]!.desired.resources.has('user/alice'), 'desired state holds the user');
  t.match(service.current().etag, /^"[0-9a-f]{64}"$/);
});

t.test('an edit in place is applied', async (t) => {
  const { file, sink } = await setup(t);
  await sink.until('first submit', () => sink.submits.length === 1);
  await writeFile(file, doc(['alice', 'bob']));
  await sink.until('second submit', () => sink.submits.length === 2);
  t.ok(sink.submits[1]!.desired.resources.has('user/bob'));
});

t.test("an editor's rename-on-save is applied, and watching goes on after it", async (t) => {
  const { dir, file, sink } = await setup(t);
  await sink.until('first submit', () => sink.submits.length === 1);
  const tmp = path.join(dir, '.config.json.swp');
  await writeFile(tmp, doc(['carol']));
  await rename(tmp, file);
  await sink.until('submit after rename', () => sink.submits.length === 2);
  t.ok(sink.submits[1]!.desired.resources.has('user/carol'));
  await writeFile(file, doc(['dave']));
  await sink.until('submit after a later edit', () => sink.submits.length === 3);
  t.ok(sink.submits[2]!.desired.resources.has('user/dave'));
});

t.test('our own write is not applied a second time; a no-op save is ignored', async (t) => {
  const { file, sink, service, nextRefresh } = await setup(t);
  await sink.until('first submit', () => sink.submits.length === 1);
  const seen = nextRefresh();
  const result = await service.edit(
    (d) => ({ ...d, user: [...(d['user'] as object[]), { login: 'erin', password: 'x' }] }),
    { message: 'config: add user "erin"' },
  );
  await sink.until('submit of the edit', () => sink.submits.length === 2);
  t.equal(sink.submits[1]!.origin, 'api');
  t.equal(await seen, 'unchanged', 'the watcher saw our write and ignored it');
  t.equal(sink.submits.length, 2, 'no second apply');
  const text = await readFile(file, 'utf8');
  t.match(text, /erin/);
  t.equal(service.current().etag, result.etag);

  const again = nextRefresh();
  await writeFile(file, text); // an editor saving without a change
  t.equal(await again, 'unchanged');
  t.equal(sink.submits.length, 2);
});

t.test('an invalid file is refused and reported; the next good one applies', async (t) => {
  const { file, sink, service } = await setup(t);
  await sink.until('first submit', () => sink.submits.length === 1);
  const good = service.current();
  await writeFile(file, '{ "user": [ { "login": "x", "password": "y" } ');
  await sink.until('reportInvalid', () => sink.invalid.length === 1);
  t.equal(sink.invalid[0]!.origin, 'file');
  t.ok(sink.invalid[0]!.issues.length > 0);
  t.ok(sink.invalid[0]!.issues[0]!.line !== undefined, 'syntax error has a line');
  t.equal(sink.submits.length, 1, 'nothing submitted');
  t.equal(service.current().etag, good.etag, 'the last good config stays current');
  t.ok(service.invalid(), 'the service knows the source is invalid');
  await t.rejects(
    service.edit((d) => d, { message: 'x' }),
    { status: 409, code: 'CONFLICT' },
    'API edits over an invalid file are refused',
  );
  await writeFile(file, doc(['frank']));
  await sink.until('submit of the fixed file', () => sink.submits.length === 2);
  t.ok(sink.submits[1]!.desired.resources.has('user/frank'));
  t.equal(service.invalid(), undefined);
});

t.test('a stale If-Match is refused with 412 and nothing is written', async (t) => {
  const { file, service } = await setup(t);
  const before = await readFile(file, 'utf8');
  await t.rejects(
    service.edit((d) => ({ ...d, user: [] }), { message: 'x', ifMatch: '"0000"' }),
    { status: 412, code: 'PRECONDITION_FAILED' },
  );
  t.equal(await readFile(file, 'utf8'), before);
  const ok = await service.edit((d) => ({ ...d, user: [] }), {
    message: 'x',
    ifMatch: service.current().etag,
  });
  t.match(ok.etag, /^"[0-9a-f]{64}"$/);
});

t.test('a missing file starts as {} and is created by the first edit', async (t) => {
  const dir = await tempDir(t);
  const file = path.join(dir, 'new.json');
  const sink = new RecordingSink();
  const service = new ConfigServiceImpl({
    loop: sink,
    persister: new FilePersister(file),
    log: silentLogger,
    source: file,
    info: () => ({}),
  });
  const watcher = new FileWatcher({ file, service, clock: systemClock, log: silentLogger });
  t.teardown(() => watcher.close());
  t.equal(await watcher.refresh(true), 'applied');
  t.same(service.current().doc, {});
  await sink.until('the empty config submitted', () => sink.submits.length === 1);
  t.equal(sink.submits[0]!.desired.resources.has('user/x'), false);
  await service.edit((d) => ({ ...d, user: [{ login: 'x', password: 'y' }] }), {
    message: 'config: create user "x"',
  });
  t.same(JSON.parse(await readFile(file, 'utf8')), { user: [{ login: 'x', password: 'y' }] });
});
