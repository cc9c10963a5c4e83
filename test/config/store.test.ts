// Atomic write of the config file, and the precompiled validator being current.
import { mkdtempSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import t from 'tap';
import { PRECOMPILED, schemasHash } from '../../src/config/schema.ts';
import { writeFileAtomic } from '../../src/config/store.ts';

t.test('writeFileAtomic replaces the file and leaves no temp file', async (t) => {
  const dir = mkdtempSync(join(tmpdir(), 'sluice-atomic-'));
  t.teardown(() => rmSync(dir, { recursive: true, force: true }));
  const path = join(dir, 'config.json');
  await writeFileAtomic(path, '{"a": 1}\n');
  t.equal(readFileSync(path, 'utf8'), '{"a": 1}\n');
  t.equal(statSync(path).mode & 0o777, 0o600, 'a new file is owner-only (it holds passwords)');
  writeFileSync(path, 'old');
  const { chmodSync } = await import('node:fs');
  chmodSync(path, 0o640);
  await writeFileAtomic(path, '{"b": 2}\n');
  t.equal(readFileSync(path, 'utf8'), '{"b": 2}\n');
  t.equal(statSync(path).mode & 0o777, 0o640, 'the mode of the replaced file is kept');
  t.same(readdirSync(dir), ['config.json']);
  // concurrent writers: the file always ends as one of the complete texts
  await Promise.all(Array.from({ length: 20 }, (_, i) => writeFileAtomic(path, `{"n": ${i}}\n`)));
  t.match(readFileSync(path, 'utf8'), /^\{"n": \d+\}\n$/);
  t.same(readdirSync(dir), ['config.json']);
});

t.test('writeFileAtomic fails cleanly when the directory is missing', async (t) => {
  await t.rejects(writeFileAtomic('/nonexistent-dir-sluice/x.json', '{}'));
});

t.test('the precompiled validator matches the schema files', async (t) => {
  const mod = createRequire(import.meta.url)(PRECOMPILED) as { schemaHash?: string };
  t.equal(mod.schemaHash, schemasHash(), 'run: npx tsx scripts/gen-config-validator.ts');
});
