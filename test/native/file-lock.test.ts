// FileLock (native/fs/file_lock.cc): one holder at a time, its details readable by whoever is
// refused; release is idempotent; a child process does not inherit the lock, and a holder's
// death (SIGKILL) frees it.
import { spawn } from 'node:child_process';
import { join } from 'node:path';
import t from 'tap';
import { describeHolder, FileLock, type LockAttempt } from '../../src/native/file-lock.ts';
import { NativeError } from '../../src/native/index.ts';
import { tempDir } from '../helpers/stream-host.ts';

function lockOf(a: LockAttempt): FileLock {
  if (!('lock' in a)) throw new Error(`not locked: held by ${describeHolder(a.heldBy)}`);
  return a.lock;
}

t.test(
  'a second take is refused with the holder; release frees it, twice is harmless',
  async (t) => {
    const file = join(tempDir(t, 'sluice-test-lock-'), 'x.lock');
    const lock = lockOf(FileLock.take(file, { admin: 'http://127.0.0.1:1/' }));
    lock.describe({ node: 'a' });
    const again = FileLock.take(file);
    t.notOk('lock' in again, 'a second lock (another open file) is refused');
    const holder = 'heldBy' in again ? again.heldBy : undefined;
    t.equal(holder?.pid, process.pid);
    t.same(holder?.details, { admin: 'http://127.0.0.1:1/', node: 'a' }, 'details merged');
    t.match(describeHolder(holder), `pid ${process.pid} on host `);
    t.match(describeHolder(holder), ', admin http://127.0.0.1:1/, node a');
    lock.release();
    lock.release();
    t.notOk(lock.held);
    const next = lockOf(FileLock.take(file));
    t.ok(next.held, 'free again after release');
    next.release();
  },
);

t.test('bad arguments and a missing directory are NativeErrors', async (t) => {
  t.throws(() => FileLock.take(''), { code: 'ERR_NATIVE_ARG' });
  t.throws(() => FileLock.take('/x', { n: 1 as unknown as string }), { code: 'ERR_NATIVE_ARG' });
  const missing = join(tempDir(t, 'sluice-test-lock-'), 'no', 'x.lock');
  const err = t.throws(() => FileLock.take(missing)) as NativeError;
  t.ok(err instanceof NativeError);
  t.equal(err.code, 'ENOENT');
  t.equal(err.syscall, 'open');
});

t.test('a child does not inherit the lock; a holder killed with SIGKILL frees it', async (t) => {
  const file = join(tempDir(t, 'sluice-test-lock-'), 'x.lock');
  const lock = lockOf(FileLock.take(file));
  // A child started while the lock is held (as a server starts ffmpeg) outlives the release.
  const child = spawn('sleep', ['60'], { stdio: 'ignore' });
  t.teardown(() => child.kill('SIGKILL'));
  lock.release();
  const mine = lockOf(FileLock.take(file));
  t.ok(mine.held, 'free once the parent lets go, the child still running');
  mine.release();

  // Another process holds it until it is killed.
  const script = `import('${join(import.meta.dirname, '../../src/native/file-lock.ts')}').then((m) => {
    const got = m.FileLock.take(${JSON.stringify(file)});
    process.stdout.write('lock' in got ? 'held\\n' : 'refused\\n');
    setInterval(() => {}, 1000);
  });`;
  const holder = spawn(process.execPath, ['--import', 'tsx', '-e', script], {
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  const gone = new Promise((r) => holder.once('exit', r));
  t.teardown(() => holder.kill('SIGKILL'));
  const said = await new Promise<string>((r) => holder.stdout.once('data', (b) => r(String(b))));
  t.equal(said.trim(), 'held', 'the other process has it');
  const refused = FileLock.take(file);
  t.notOk('lock' in refused, 'refused while the other process lives');
  if ('heldBy' in refused) t.equal(refused.heldBy?.pid, holder.pid, 'names that process');
  holder.kill('SIGKILL');
  await gone;
  const after = lockOf(FileLock.take(file));
  t.ok(after.held, 'free once it was killed');
  after.release();
});
