// Which test files scripts/test runs, in which tier: `unit` prints the unit tier (no child
// process: no external binary, no server process — see tierOf), `parallel` the other files that
// may run beside each other (one tap, four at a time), `serial` package.json's tap.serial.
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { dirname, join, relative, resolve } from 'node:path';

const root = join(import.meta.dirname, '..');
const serial: string[] = JSON.parse(readFileSync(join(root, 'package.json'), 'utf8')).tap.serial;
export const integration: Record<string, string> = JSON.parse(
  readFileSync(join(root, 'scripts/test-tiers.json'), 'utf8'),
).integration;

export function testFiles(dir = 'test'): string[] {
  const out: string[] = [];
  for (const e of readdirSync(join(root, dir), { withFileTypes: true })) {
    const rel = `${dir}/${e.name}`;
    if (e.isDirectory()) {
      if (e.name !== 'helpers' && e.name !== 'fixtures') out.push(...testFiles(rel));
    } else if (e.name.endsWith('.test.ts')) out.push(rel);
  }
  return out.sort();
}

/** What test/helpers/server.ts offers without starting anything. */
const SERVER_PURE = new Set([
  'REPO_ROOT',
  'SLUICE_BIN',
  'freePort',
  'tempDir',
  'loopbackServers',
  'Teardown',
]);
const IMPORT =
  /(?:import|export)\s+(type\s+)?(?:\{([^}]*)\}|[\w*\s,]+)?\s*(?:from\s+)?'([^']+)'|import\(\s*'([^']+)'\s*\)/g;

const spawnCache = new Map<string, string | undefined>();
/** Why a module of test/ may start a child process — it imports node:child_process, or a module
 *  of test/ that does (test/helpers/server.ts counts only for its starters) — or undefined. */
export function startsChild(file: string): string | undefined {
  if (spawnCache.has(file)) return spawnCache.get(file);
  spawnCache.set(file, undefined);
  const text = readFileSync(join(root, file), 'utf8');
  let why: string | undefined;
  for (const m of text.matchAll(IMPORT)) {
    const [, typeOnly, names, from, dynamic] = m;
    const spec = from ?? dynamic!;
    if (spec === 'node:child_process' || spec === 'child_process')
      why = 'imports node:child_process';
    if (why || typeOnly || !spec.startsWith('.')) continue;
    const target = relative(root, resolve(root, dirname(file), spec));
    if (!target.startsWith('test/') || !existsSync(join(root, target))) continue;
    if (target === 'test/helpers/server.ts' && names) {
      const used = names.split(',').map(
        (n) =>
          n
            .trim()
            .replace(/^type\s+/, '')
            .split(/\s+as\s+/)[0]!,
      );
      if (used.filter(Boolean).every((n) => SERVER_PURE.has(n))) continue;
    }
    if (startsChild(target)) why = `imports ${target}, which starts child processes`;
  }
  spawnCache.set(file, why);
  return why;
}

/** A file is in the unit tier unless it may start a child process (startsChild) or is named in
 *  scripts/test-tiers.json (with the reason: slow though pure, or a child started from src/)
 *  or in package.json's tap.serial. The unit run makes every child process throw (test/helpers/unit-guard.mjs). */
export function tierOf(file: string): 'unit' | 'parallel' | 'serial' {
  if (serial.includes(file)) return 'serial';
  if (file in integration || startsChild(file)) return 'parallel';
  return 'unit';
}

if (import.meta.filename === process.argv[1]) {
  const mode = process.argv[2];
  if (mode !== 'unit' && mode !== 'parallel' && mode !== 'serial') {
    console.error('usage: tsx scripts/test-order.ts unit | parallel | serial');
    process.exit(2);
  }
  for (const f of testFiles()) if (tierOf(f) === mode) console.log(f);
}
