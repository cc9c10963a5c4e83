// `sluice fmt [--check] FILE`: rewrite a config in minimal form (defaults elided, stable
// member order), atomically; `--check` only reports.
import { readFile } from 'node:fs/promises';
import { parseArgs } from 'node:util';
import { elideDefaults, formatConfig, writeFileAtomic } from '../config/store.ts';
import { loadFileForCli } from './validate.ts';

export async function fmtCommand(argv: string[]): Promise<number> {
  const { values, positionals } = parseArgs({
    args: argv,
    options: { check: { type: 'boolean' } },
    allowPositionals: true,
    strict: true,
  });
  if (positionals.length !== 1) throw new Error('usage: sluice fmt [--check] FILE');
  const file = positionals[0]!;
  const loaded = await loadFileForCli(file);
  if (!loaded) return 1;
  const minimal = formatConfig(elideDefaults(loaded.doc));
  const current = await readFile(file, 'utf8');
  if (minimal === current) {
    if (values.check) process.stdout.write(`${file}: already in minimal form\n`);
    return 0;
  }
  if (values.check) {
    process.stdout.write(`${file}: not in minimal form (run sluice fmt ${file})\n`);
    return 1;
  }
  await writeFileAtomic(file, minimal);
  process.stdout.write(`${file}: rewritten in minimal form\n`);
  return 0;
}
