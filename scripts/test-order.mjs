#!/usr/bin/env node
// Which test files scripts/test runs where: `parallel` prints the files that may run beside
// others (one tap, four at a time: tap's own pool takes the next file as one ends), `serial`
// the files of package.json's tap.serial list (timing- or load-sensitive), run alone after
// them. Measured on 2026-11-28: four static lists of about equal recorded length, one tap each,
// took longer than tap's own pool (file times vary from run to run; a pool does not care).
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';

const root = join(import.meta.dirname, '..');

function testFiles(dir) {
  const out = [];
  for (const e of readdirSync(join(root, dir), { withFileTypes: true })) {
    const rel = `${dir}/${e.name}`;
    if (e.isDirectory()) {
      if (e.name !== 'helpers' && e.name !== 'fixtures') out.push(...testFiles(rel));
    } else if (e.name.endsWith('.test.ts')) out.push(rel);
  }
  return out;
}

const mode = process.argv[2];
if (mode !== 'parallel' && mode !== 'serial') {
  console.error('usage: test-order.mjs parallel | serial');
  process.exit(2);
}
const serial = new Set(JSON.parse(readFileSync(join(root, 'package.json'), 'utf8')).tap.serial);
for (const f of testFiles('test').sort()) if (serial.has(f) === (mode === 'serial')) console.log(f);
