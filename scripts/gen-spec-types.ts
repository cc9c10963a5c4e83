// Writes src/config/spec-types.generated.ts: one TypeScript interface per resource kind (and per
// record schema they embed, e.g. stream inputs), read from schemas/. Run after editing schemas/
// (`npx tsx scripts/gen-spec-types.ts`); test/config/spec-types.test.ts fails on a stale file.
import { execFileSync } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { RECORD_DEFS, SINGLETON_KINDS } from '../src/config/kinds.ts';
import { kindSchema, resolveRef, type SchemaNode, schemasHash } from '../src/config/schema.ts';

export const SPEC_TYPES = fileURLToPath(
  new URL('../src/config/spec-types.generated.ts', import.meta.url),
);
const BIOME = fileURLToPath(new URL('../node_modules/.bin/biome', import.meta.url));

/** One member of an interface: its schema fragments (a member may be refined by conditions). */
interface Member {
  fragments: SchemaNode[];
  required: boolean;
  /** A default outside any condition: a record with defaults applied always has it. */
  defaulted: boolean;
}

const pascal = (s: string): string =>
  s.replace(/(^|[-_.])([a-z0-9])/g, (_m, _sep, c: string) => c.toUpperCase());

/** Names of the interfaces, by the schema node they describe. */
class Namer {
  readonly names = new Map<SchemaNode, string>();
  /** Nodes named but not yet written, in the order they were met. */
  readonly queue: SchemaNode[] = [];

  name(node: SchemaNode, name: string): string {
    const known = this.names.get(node);
    if (known) return known;
    this.names.set(node, name);
    this.queue.push(node);
    return name;
  }
}

/** Follow `$ref`s to the node that has the content. */
function target(node: SchemaNode): SchemaNode {
  let n = node;
  for (let hops = 0; typeof n['$ref'] === 'string' && hops < 8; hops++)
    n = resolveRef(n, n['$ref']);
  return n;
}

/** Members of an object schema: unconditional `required` ones stay required; members that
 *  only a condition (`if`/`then`/`else`) adds are optional. */
function members(node: SchemaNode): Map<string, Member> {
  const out = new Map<string, Member>();
  const visit = (n: SchemaNode, conditional: boolean, seen: Set<SchemaNode>): void => {
    if (seen.has(n)) return;
    seen.add(n);
    if (typeof n['$ref'] === 'string') visit(resolveRef(n, n['$ref']), conditional, seen);
    // The object's own members first (an input's `type`), then what its fragments add.
    for (const [name, sub] of Object.entries((n['properties'] ?? {}) as Record<string, unknown>)) {
      if (typeof sub !== 'object' || sub === null) continue; // `false`: forbidden by a condition
      const m = out.get(name) ?? { fragments: [], required: false, defaulted: false };
      m.fragments.push(sub as SchemaNode);
      if (!conditional && 'default' in sub) m.defaulted = true;
      out.set(name, m);
    }
    if (!conditional) {
      for (const r of (n['required'] as string[] | undefined) ?? []) {
        const m = out.get(r);
        if (m) m.required = true;
      }
    }
    for (const sub of (n['allOf'] as SchemaNode[] | undefined) ?? []) visit(sub, conditional, seen);
    if (n['then']) visit(n['then'], true, seen);
    if (n['else']) visit(n['else'], true, seen);
  };
  visit(node, false, new Set());
  return out;
}

const PRIMITIVE: Record<string, string> = {
  integer: 'number',
  number: 'number',
  string: 'string',
  boolean: 'boolean',
  null: 'null',
};

/** The TypeScript type of a schema node. */
function typeOf(node: SchemaNode, namer: Namer, hint: string): string {
  const t = target(node);
  if (t !== node && namer.names.has(t)) return namer.names.get(t)!;
  if (Array.isArray(t['enum'])) return t['enum'].map((v) => JSON.stringify(v)).join(' | ');
  if ('const' in t) return JSON.stringify(t['const']);
  const alts = (t['oneOf'] ?? t['anyOf']) as SchemaNode[] | undefined;
  if (alts) return union(alts.map((a) => typeOf(a, namer, hint)));
  const types = Array.isArray(t['type']) ? (t['type'] as string[]) : [t['type'] as string];
  return union(
    types.map((ty) => {
      if (ty === 'array') {
        const items = t['items'] as SchemaNode | undefined;
        const inner = items ? typeOf(items, namer, hint) : 'unknown';
        return inner.includes(' ') ? `(${inner})[]` : `${inner}[]`;
      }
      if (ty === 'object' || (ty === undefined && (t['properties'] || t['allOf']))) {
        // An object with members of its own gets an interface; a free-form one is a record.
        if (members(t).size === 0) return 'Record<string, unknown>';
        return namer.name(t, `${hint}Spec`);
      }
      return PRIMITIVE[ty] ?? 'unknown';
    }),
  );
}

/** Union of types; a fragment that only refines a member (no type of its own) adds none. */
function union(types: string[]): string {
  const all = [...new Set(types.flatMap((t) => t.split(' | ')))];
  const known = all.filter((t) => t !== 'unknown');
  return (known.length > 0 ? known : all).join(' | ');
}

/** Doc comment of a member: its descriptions and defaults (several when conditions differ,
 *  e.g. `pnr` of a demuxer and of another input type). */
function docOf(fragments: SchemaNode[]): string[] {
  const distinct = (key: string): unknown[] =>
    [
      ...new Map(fragments.filter((f) => key in f).map((f) => [JSON.stringify(f[key]), f[key]])),
    ].map(([, v]) => v);
  const lines = distinct('description')
    .filter((d): d is string => typeof d === 'string')
    .map((d, i) => (i > 0 ? 'or: ' : '') + d.replaceAll('*/', '*\\/'));
  const defaults = distinct('default').map((d) => JSON.stringify(d));
  if (defaults.length === 1) lines.push(`@default ${defaults[0]}`);
  else if (defaults.length > 1)
    lines.push(`@default ${defaults.join(' or ')}, depending on the record's other members`);
  if (lines.length === 0) return [];
  return ['  /**', ...lines.map((l) => `   * ${l}`), '   */'];
}

const IDENTIFIER = /^[A-Za-z_$][A-Za-z0-9_$]*$/;

function interfaceOf(node: SchemaNode, name: string, namer: Namer): string[] {
  const title = typeof node['title'] === 'string' ? node['title'] : name;
  const out = [`/** ${title} */`, `export interface ${name} {`];
  const all = members(node);
  for (const [member, m] of all) {
    const hint = name.replace(/Spec$/, '') + pascal(member);
    const type = union(m.fragments.map((f) => typeOf(f, namer, hint)));
    const key = IDENTIFIER.test(member) ? member : `'${member}'`;
    out.push(...docOf(m.fragments), `  ${key}${m.required ? '' : '?'}: ${type};`);
  }
  out.push('}', '');
  // The record as drivers get it (every unconditional default applied): those members are
  // always there, so a driver reads `spec.pause` without repeating its default.
  const defaulted = [...all]
    .filter(([, m]) => m.defaulted && !m.required)
    .map(([member]) => `'${member}'`);
  if (defaulted.length > 0) {
    const applied = name.replace(/Spec$/, 'Applied');
    out.push(
      `/** ${title}, as a driver gets it: every unconditional default applied. */`,
      `export type ${applied} = ${name} & Required<Pick<${name}, ${defaulted.join(' | ')}>>;`,
      '',
    );
  }
  return out;
}

/** The generated module's text (before formatting). */
export function generateSpecTypes(): string {
  const namer = new Namer();
  // Kinds first, so a record schema another embeds (a billing server in `cs`) keeps its
  // kind's name; then whatever they embed, as met.
  for (const kind of SINGLETON_KINDS) namer.name(target(kindSchema(kind)), `${pascal(kind)}Spec`);
  for (const d of RECORD_DEFS) namer.name(target(kindSchema(d.kind)), `${pascal(d.kind)}Spec`);
  const body: string[] = [];
  const applied = new Map<SchemaNode, string>();
  for (let i = 0; i < namer.queue.length; i++) {
    const node = namer.queue[i]!;
    const lines = interfaceOf(node, namer.names.get(node)!, namer);
    const alias = lines.find((l) => l.startsWith('export type '));
    if (alias) applied.set(node, alias.split(' ')[2]!);
    body.push(...lines);
  }
  // What each kind's driver gets (src/reconciler/driver.ts: Driver<K>).
  body.push("/** Each resource kind's record as its driver gets it (every default applied). */");
  body.push('export interface AppliedSpecByKind {');
  for (const kind of [...SINGLETON_KINDS, ...RECORD_DEFS.map((d) => d.kind)]) {
    const node = target(kindSchema(kind));
    const name = applied.get(node) ?? namer.names.get(node)!;
    body.push(`  ${IDENTIFIER.test(kind) ? kind : `'${kind}'`}: ${name};`);
  }
  body.push('}', '');
  return [
    '// Generated by scripts/gen-spec-types.ts from schemas/*.json. Do not edit.',
    '// One interface per resource kind (and per record schema they embed); members a condition',
    '// adds are optional; unknown members (accepted with a warning) are not typed.',
    '',
    `export const SPEC_TYPES_SCHEMA_HASH = ${JSON.stringify(schemasHash())};`,
    '',
    ...body,
  ].join('\n');
}

/** The module as written: generated, then formatted by the house formatter. */
export function formattedSpecTypes(): string {
  return execFileSync(BIOME, ['format', `--stdin-file-path=${SPEC_TYPES}`], {
    input: generateSpecTypes(),
    encoding: 'utf8',
  });
}

if (import.meta.url === `file://${process.argv[1]}`) {
  writeFileSync(SPEC_TYPES, formattedSpecTypes());
  console.log(`wrote ${SPEC_TYPES}`);
}
