// writeDurable's O_DIRECT path (native/fs/durable_write.cc): page-aligned segment blocks go to
// the disk without a copy into the page cache where the filesystem takes O_DIRECT, and through
// it where it does not (ramfs refuses; unaligned memory is never sent direct).
import { execFileSync } from 'node:child_process';
import { randomFillSync } from 'node:crypto';
import { mkdirSync, readdirSync, readFileSync, statfsSync } from 'node:fs';
import { join } from 'node:path';
import t, { type Test } from 'tap';
import { NativeError, writeDurable, writeDurableStats } from '../../src/native/index.ts';
import { mapBlock } from '../../src/native/pages.ts';
import { tempDir } from '../helpers/stream-host.ts';

const LENGTHS = [0, 1, 4095, 4096, 4097, (2 << 20) + 13];
const WHOLE_PAGES = LENGTHS.filter((n) => n >= 4096).length;
/** Disk filesystems whose O_DIRECT this test expects to be taken (statfs magic numbers). */
const DIRECT_FS = new Set([0xef53 /* ext2/3/4 */, 0x58465342 /* xfs */, 0x9123683e /* btrfs */]);

/** A page-aligned block (a segment pool block) full of random bytes. */
function alignedBlock(): Buffer {
  const block = mapBlock(4 << 20);
  randomFillSync(block);
  return block;
}

function delta(before: ReturnType<typeof writeDurableStats>) {
  const now = writeDurableStats();
  return {
    direct: now.direct - before.direct,
    buffered: now.buffered - before.buffered,
    fallbacks: now.fallbacks - before.fallbacks,
    directBytes: now.directBytes - before.directBytes,
  };
}

function noTemp(t: Test, dir: string): void {
  t.same(
    readdirSync(dir).filter((f) => f.endsWith('.tmp')),
    [],
    'no temp file left',
  );
}

t.test('aligned blocks: the bytes land whole, whole pages go direct', async (t) => {
  const dir = tempDir(t, 'sluice-test-direct-');
  const onDisk = DIRECT_FS.has(statfsSync(dir).type);
  const block = alignedBlock();
  const before = writeDurableStats();
  for (const n of LENGTHS) await writeDurable(join(dir, `len-${n}.ts`), block.subarray(0, n));
  for (const n of LENGTHS) {
    t.ok(readFileSync(join(dir, `len-${n}.ts`)).equals(block.subarray(0, n)), `${n} bytes equal`);
  }
  noTemp(t, dir);
  const d = delta(before);
  t.equal(d.direct + d.buffered, LENGTHS.length, 'every write counted once');
  if (onDisk) {
    t.equal(d.direct, WHOLE_PAGES, 'each write of a page or more went direct');
    const pages = LENGTHS.reduce((s, n) => s + Math.floor(n / 4096) * 4096, 0);
    t.equal(d.directBytes, pages, 'whole pages direct, tails buffered');
    t.equal(d.fallbacks, 0);
  } else {
    t.equal(d.direct + d.fallbacks, WHOLE_PAGES, 'direct, or refused and counted');
  }
  t.equal(writeDurableStats().copiesMostAtOnce, 1, 'tails still copied one at a time');
});

t.test('an existing file is replaced whole on the direct path', async (t) => {
  const dir = tempDir(t, 'sluice-test-direct-');
  const block = alignedBlock();
  const f = join(dir, 'a.ts');
  await writeDurable(f, block.subarray(0, 3 << 20));
  await writeDurable(f, block.subarray(0, 8192 + 7));
  t.ok(readFileSync(f).equals(block.subarray(0, 8192 + 7)), 'the shorter file, nothing after it');
});

t.test('unaligned memory and direct: false go through the page cache', async (t) => {
  const dir = tempDir(t, 'sluice-test-direct-');
  const block = alignedBlock();
  const before = writeDurableStats();
  const odd = block.subarray(1, 1 + (1 << 20));
  await writeDurable(join(dir, 'odd.ts'), odd);
  await writeDurable(join(dir, 'asked.ts'), block.subarray(0, 1 << 20), { direct: false });
  t.ok(readFileSync(join(dir, 'odd.ts')).equals(odd));
  t.ok(readFileSync(join(dir, 'asked.ts')).equals(block.subarray(0, 1 << 20)));
  t.same(delta(before), { direct: 0, buffered: 2, fallbacks: 0, directBytes: 0 });
});

t.test('a filesystem that refuses O_DIRECT (ramfs): buffered, asked once', async (t) => {
  const mnt = join(tempDir(t, 'sluice-test-direct-'), 'ramfs');
  mkdirSync(mnt);
  execFileSync('mount', ['-t', 'ramfs', 'ramfs', mnt]);
  t.teardown(() => execFileSync('umount', ['-l', mnt]));
  const block = alignedBlock();
  const before = writeDurableStats();
  for (let i = 0; i < 3; i++) {
    await writeDurable(join(mnt, `c-${i}.ts`), block.subarray(0, (2 << 20) + i));
  }
  for (let i = 0; i < 3; i++) {
    t.ok(readFileSync(join(mnt, `c-${i}.ts`)).equals(block.subarray(0, (2 << 20) + i)));
  }
  t.same(delta(before), { direct: 0, buffered: 3, fallbacks: 3, directBytes: 0 });
  t.ok(writeDurableStats().refusedFilesystems >= 1, 'the refusal is remembered');
  noTemp(t, mnt);
});

t.test('a failure after the direct write leaves no temp file', async (t) => {
  const dir = tempDir(t, 'sluice-test-direct-');
  const block = alignedBlock();
  // rename onto a non-empty directory fails once the bytes are written.
  const target = join(dir, 'taken');
  mkdirSync(target);
  mkdirSync(join(target, 'keep'));
  const err = await writeDurable(target, block.subarray(0, (2 << 20) + 13)).catch((e) => e);
  t.type(err, NativeError);
  t.match(err, { syscall: 'rename' });
  noTemp(t, dir);
  // the filesystem fills during the direct write (a 1 MiB tmpfs, which takes O_DIRECT): the
  // write fails and the partly written temp file goes.
  const mnt = join(dir, 'small');
  mkdirSync(mnt);
  execFileSync('mount', ['-t', 'tmpfs', '-o', 'size=1m', 'tmpfs', mnt]);
  t.teardown(() => execFileSync('umount', ['-l', mnt]));
  const err2 = await writeDurable(join(mnt, 'a.ts'), block.subarray(0, 2 << 20)).catch((e) => e);
  t.match(err2, { code: 'ENOSPC', syscall: 'write' });
  t.match((err2 as Error).message, /small\/a\.ts\.tmp/, 'names the file');
  noTemp(t, mnt);
});
