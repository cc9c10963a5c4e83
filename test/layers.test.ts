// The layer rules of docs/architecture.md, enforced: every relative import in src/ goes to a
// folder its row allows (or, for `import type`, names in "types of"); every folder of src/ has
// a row; framework packages stay in their folder.
import { readdirSync, readFileSync } from 'node:fs';
import { dirname, join, normalize, relative } from 'node:path';
import t from 'tap';
import { REPO_ROOT } from './helpers/server.ts';

const SRC = join(REPO_ROOT, 'src');
const doc = readFileSync(join(REPO_ROOT, 'docs/architecture.md'), 'utf8');

function tableRows(name: string): string[][] {
  const m = new RegExp(`<!-- ${name}:begin -->([\\s\\S]*?)<!-- ${name}:end -->`).exec(doc);
  if (!m) throw new Error(`docs/architecture.md has no ${name} table`);
  return m[1]!
    .split('\n')
    .filter((l) => l.startsWith('|') && !/^\|\s*-/.test(l))
    .slice(1)
    .map((l) =>
      l
        .split('|')
        .slice(1, -1)
        .map((c) => c.trim()),
    );
}

const list = (cell: string) =>
  cell === '—' ? [] : cell.split(',').map((x) => x.trim().replace(/`/g, ''));

interface Rule {
  imports: Set<string>;
  types: Set<string>;
}
const rules = new Map<string, Rule>();
for (const [folder, what, imports, types] of tableRows('layers')) {
  const name = folder!.replace(/`/g, '');
  if (!what) throw new Error(`layer ${name} says nothing of what it is`);
  rules.set(name, { imports: new Set(list(imports!)), types: new Set(list(types!)) });
}
const packages = new Map(tableRows('packages').map(([p, f]) => [p!.replace(/`/g, ''), f!]));

function sources(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((e) =>
    e.isDirectory()
      ? sources(join(dir, e.name))
      : /\.(ts|mjs)$/.test(e.name)
        ? [join(dir, e.name)]
        : [],
  );
}

/** The layer of a path under src/: its first folder, or the file itself at the top. */
function layerOf(file: string): string {
  const parts = relative(SRC, file).split('/');
  return parts.length > 1 ? parts[0]! : parts[0]!;
}

const IMPORT = /^(?:import|export)\s+(type\s+)?(?:([^;'"]*?)\s+from\s+)?['"]([^'"]+)['"]/gm;
const DYNAMIC = /\bimport\(\s*['"]([^'"]+)['"]\s*\)/g;

/** `import { type A, type B }`: every named specifier is a type. */
function allTypes(clause: string | undefined): boolean {
  if (!clause) return false;
  const m = /^\{([^}]*)\}$/.exec(clause.trim());
  if (!m) return false;
  const names = m[1]!
    .split(',')
    .map((x) => x.trim())
    .filter(Boolean);
  return names.length > 0 && names.every((n) => n.startsWith('type '));
}

t.test('every folder and top-level file of src/ has a row in the layer table', async (t) => {
  for (const e of readdirSync(SRC)) {
    if (e.endsWith('.d.ts')) continue;
    t.ok(rules.has(e), `src/${e} has a row in docs/architecture.md`);
  }
  for (const name of rules.keys()) {
    t.ok(readdirSync(SRC).includes(name), `the row ${name} names something in src/`);
  }
});

t.test('no import crosses the layer rules', async (t) => {
  const bad: string[] = [];
  let edges = 0;
  for (const file of sources(SRC)) {
    const from = layerOf(file);
    const rule = rules.get(from);
    if (!rule) continue; // reported by the test above
    const text = readFileSync(file, 'utf8');
    const line = (i: number) => text.slice(0, i).split('\n').length;
    const check = (spec: string, typeOnly: boolean, at: number) => {
      const where = `${relative(REPO_ROOT, file)}:${line(at)}`;
      if (!spec.startsWith('.')) {
        const pkg = spec.startsWith('@')
          ? spec.split('/').slice(0, 2).join('/')
          : spec.split('/')[0]!;
        const home = packages.get(pkg);
        if (home && home !== from) bad.push(`${where}: ${pkg} belongs in ${home}/, not ${from}`);
        return;
      }
      const target = normalize(join(dirname(file), spec));
      if (!target.startsWith(SRC)) return;
      const to = layerOf(target);
      if (to === from) return;
      edges++;
      if (rule.imports.has(to)) return;
      if (typeOnly && rule.types.has(to)) return;
      bad.push(`${where}: ${from} may not import ${to}${typeOnly ? ' (types)' : ''} (${spec})`);
    };
    for (const m of text.matchAll(IMPORT)) {
      check(m[3]!, !!m[1] || allTypes(m[2]), m.index ?? 0);
    }
    for (const m of text.matchAll(DYNAMIC)) check(m[1]!, false, m.index ?? 0);
  }
  t.ok(edges > 100, `${edges} imports between layers checked`);
  t.same(bad, [], 'imports that cross the layer rules');
});
