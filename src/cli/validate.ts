// `sluice validate FILE` and `sluice fmt [--check] FILE`'s shared reading step.
import { readFile } from 'node:fs/promises';
import { parseArgs } from 'node:util';
import type { LoadedConfig } from '../config/contracts.ts';
import { loadConfigText } from '../config/store.ts';
import { ConfigError } from '../config/types.ts';
import { formatIssues } from './issues.ts';

/** Load FILE; on problems print them to stderr and return undefined. */
export async function loadFileForCli(file: string): Promise<LoadedConfig | undefined> {
  const text = await readFile(file, 'utf8');
  try {
    const loaded = loadConfigText(text, { source: file });
    if (loaded.warnings.length > 0)
      process.stderr.write(`${formatIssues(file, loaded.warnings)}\n`);
    return loaded;
  } catch (err) {
    if (!(err instanceof ConfigError)) throw err;
    const errors = err.issues.filter((i) => i.severity === 'error').length;
    process.stderr.write(`${formatIssues(file, err.issues)}\n`);
    process.stderr.write(`${file}: invalid, ${errors} error${errors === 1 ? '' : 's'}\n`);
    return undefined;
  }
}

export async function validateCommand(argv: string[]): Promise<number> {
  const { positionals } = parseArgs({ args: argv, allowPositionals: true, strict: true });
  if (positionals.length !== 1) throw new Error('usage: sluice validate FILE');
  const file = positionals[0]!;
  const loaded = await loadFileForCli(file);
  if (!loaded) return 1;
  const n = loaded.warnings.length;
  process.stdout.write(`${file}: valid${n ? `, ${n} warning${n === 1 ? '' : 's'}` : ''}\n`);
  return 0;
}
