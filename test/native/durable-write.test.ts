// writeDurable (native/fs/durable_write.cc): a file whole under its name or not at all, from one
// thread-pool job; the copies into the page cache run one at a time, process-wide.
import { existsSync, mkdirSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import t from 'tap';
import { NativeError, writeDurable, writeDurableStats } from '../../src/native/index.ts';
import { tempDir } from '../helpers/stream-host.ts';

t.test('concurrent writes land whole, one copy at a time', async (t) => {
  const dir = tempDir(t, 'sluice-test-durable-');
  const chunks = Array.from({ length: 12 }, (_, i) => Buffer.alloc((2 << 20) + i, i + 1));
  await Promise.all(chunks.map((c, i) => writeDurable(join(dir, `chunk-${i}.ts`), c)));
  for (let i = 0; i < chunks.length; i++) {
    t.ok(readFileSync(join(dir, `chunk-${i}.ts`)).equals(chunks[i]!), `chunk ${i} whole`);
  }
  t.same(
    readdirSync(dir).filter((f) => f.endsWith('.tmp')),
    [],
    'no temp file left',
  );
  t.equal(writeDurableStats().copiesMostAtOnce, 1, 'never two copies at once');
});

t.test('an existing file is replaced whole; an empty buffer makes an empty file', async (t) => {
  const dir = tempDir(t, 'sluice-test-durable-');
  const f = join(dir, 'a.ts');
  writeFileSync(f, 'old contents, longer than the new ones');
  await writeDurable(f, Buffer.from('new'));
  t.equal(readFileSync(f, 'utf8'), 'new');
  await writeDurable(f, Buffer.alloc(0));
  t.equal(readFileSync(f).length, 0);
});

t.test('failures reject with the errno name and system call, and leave nothing', async (t) => {
  const dir = tempDir(t, 'sluice-test-durable-');
  const missing = join(dir, 'no-such-dir', 'a.ts');
  const err = await writeDurable(missing, Buffer.from('x')).catch((e: unknown) => e);
  t.type(err, NativeError);
  t.match(err, { code: 'ENOENT', syscall: 'open' });
  t.match((err as Error).message, /no-such-dir\/a\.ts\.tmp/, 'names the file');
  // rename onto a directory fails after the data was written: the temp file is removed.
  const target = join(dir, 'taken');
  mkdirSync(target);
  writeFileSync(join(target, 'keep'), '');
  const err2 = await writeDurable(target, Buffer.from('x')).catch((e: unknown) => e);
  t.match(err2, { syscall: 'rename' });
  t.notOk(existsSync(`${target}.tmp`), 'temp file removed after the failed rename');
});

t.test('bad arguments are refused before the addon', async (t) => {
  await t.rejects(writeDurable('', Buffer.from('x')), { code: 'ERR_NATIVE_ARG' });
  await t.rejects(writeDurable('/tmp/x', 'text' as unknown as Buffer), { code: 'ERR_NATIVE_ARG' });
});
