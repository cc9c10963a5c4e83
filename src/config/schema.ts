// The config schema (schemas/*.json): loaded and compiled once, on first use, plus a small
// walker that answers "which members does this record have" for a given instance, following
// $ref, allOf and the simple if/then/else conditions the schema files use (mpts, type, mode).
import { createHash } from 'node:crypto';
import { readdirSync, readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { fileURLToPath } from 'node:url';
import { Ajv2020, type ValidateFunction } from 'ajv/dist/2020.js';
import type { FieldRules } from './contracts.ts';
import { recordDef } from './kinds.ts';
import type { ApplyClass, ResourceKind } from './types.ts';

export const SVC_VERSION = '2.0.2.361';
export const SCHEMA_BASE = 'https://sluice.invalid/schemas/';
export const SCHEMA_DIR = fileURLToPath(new URL('../../schemas/', import.meta.url));
export const ROOT_SCHEMA_ID = `${SCHEMA_BASE}config.schema.json`;

// biome-ignore lint/suspicious/noExplicitAny: JSON Schema nodes are free-form
export type SchemaNode = Record<string, any>;

/** What one member of a record is, for one instance. */
export interface FieldInfo {
  /** The member's schema with every applicable fragment merged (later conditions win). */
  schema: SchemaNode;
  /** A condition forbids the member for this instance (e.g. ott-hls on an mpts stream). */
  forbidden: boolean;
}

export interface ObjectShape {
  fields: Map<string, FieldInfo>;
  required: Set<string>;
  /** additionalProperties is false: unknown members are errors, not warnings. */
  strict: boolean;
  /** x-same-length rules that apply to this object. */
  sameLength: SameLength[];
  /** Members with a default, in schema order (forbidden ones left out). */
  defaults: { name: string; value: unknown; field: FieldInfo }[];
}

interface Loaded {
  files: Map<string, SchemaNode>;
  base: WeakMap<object, string>;
  /** sha256 over the schema files, to tell whether the precompiled validator is current. */
  hash: string;
}

let loaded: Loaded | undefined;
let validator: ValidateFunction | undefined;

/** Schema keywords of our own; all are annotations for ajv (x-same-length, x-unique-member
 *  and x-url are checked by the walker in validate.ts, which keeps the validator free of
 *  custom code). */
export const ANNOTATIONS = [
  'x-apply',
  'x-secret',
  'x-ref',
  'x-when',
  'x-pattern-text',
  'x-minimum-text',
  'x-not-text',
  'x-same-length',
  'x-unique-member',
  'x-url',
];

/** Options shared by the runtime compile and the precompiled validator. */
export const AJV_OPTIONS = { allErrors: true, strict: true, strictTypes: false, verbose: true };

export const PRECOMPILED = fileURLToPath(new URL('./validator.generated.cjs', import.meta.url));

export interface SameLength {
  arrays: string[];
  /** An absent array counts as empty (std env, biss); otherwise absent arrays are skipped. */
  absentIsEmpty: boolean;
}

/** Lengths of the arrays a `x-same-length` rule names, or undefined when they agree. */
export function sameLengthMismatch(
  rule: SameLength,
  obj: Record<string, unknown>,
): Record<string, number> | undefined {
  const lengths: Record<string, number> = {};
  for (const name of rule.arrays) {
    const v = obj[name];
    if (Array.isArray(v)) lengths[name] = v.length;
    else if (rule.absentIsEmpty) lengths[name] = 0;
  }
  const distinct = new Set(Object.values(lengths));
  return distinct.size > 1 ? lengths : undefined;
}

function load(): Loaded {
  if (loaded) return loaded;
  const files = new Map<string, SchemaNode>();
  const base = new WeakMap<object, string>();
  const hash = createHash('sha256');
  for (const name of readdirSync(SCHEMA_DIR).sort()) {
    if (!name.endsWith('.schema.json')) continue;
    const text = readFileSync(SCHEMA_DIR + name, 'utf8');
    hash.update(name).update('\0').update(text).update('\0');
    const node = JSON.parse(text) as SchemaNode;
    // The files carry no $id, so editors resolve their relative $refs against the file's own
    // location; here each file is registered under a fixed base URL instead.
    const id = SCHEMA_BASE + name;
    files.set(id, node);
    markBase(node, id, base);
  }
  loaded = { files, base, hash: hash.digest('hex') };
  return loaded;
}

/** An ajv instance holding every schema file (for the runtime compile and the generator). */
export function createAjv(opts: Record<string, unknown> = {}): Ajv2020 {
  const ajv = new Ajv2020({ ...AJV_OPTIONS, ...opts });
  ajv.addVocabulary(ANNOTATIONS);
  for (const [id, node] of load().files) ajv.addSchema(structuredClone(node), id);
  return ajv;
}

/** Hash of the schema files the validator must match. */
export function schemasHash(): string {
  return load().hash;
}

function markBase(node: unknown, id: string, base: WeakMap<object, string>): void {
  if (node === null || typeof node !== 'object') return;
  base.set(node, id);
  for (const v of Object.values(node)) markBase(v, id, base);
}

/** The compiled validator of the whole document. */
export function configValidator(): ValidateFunction {
  if (validator) return validator;
  // Compiling the schema takes a few hundred ms; scripts/gen-config-validator.ts writes the
  // compiled code once. It is used only while it matches the schema files byte for byte.
  try {
    const mod = createRequire(import.meta.url)(PRECOMPILED) as ValidateFunction & {
      schemaHash?: string;
    };
    if (mod.schemaHash === load().hash) validator = mod;
  } catch {
    // absent: compile below
  }
  if (!validator) {
    const v = createAjv().getSchema(ROOT_SCHEMA_ID);
    if (!v) throw new Error(`schema ${ROOT_SCHEMA_ID} not found in ${SCHEMA_DIR}`);
    validator = v;
  }
  return validator;
}

/** The schema files by $id (for the doc generator and tests). */
export function schemaFiles(): Map<string, SchemaNode> {
  return load().files;
}

/** Resolve a `$ref` found in `from` to its target node. */
export function resolveRef(from: SchemaNode, ref: string): SchemaNode {
  const { files, base } = load();
  const url = new URL(ref, base.get(from) ?? ROOT_SCHEMA_ID);
  const fragment = decodeURIComponent(url.hash.slice(1));
  url.hash = '';
  let node = files.get(url.href);
  if (!node) throw new Error(`schema ${url.href} not found`);
  for (const tok of fragment.split('/').filter(Boolean)) node = node[tok] as SchemaNode;
  if (!node) throw new Error(`schema reference ${ref} does not resolve`);
  return node;
}

/** Root schema node of a file or `file#/fragment`. */
export function schemaNode(ref: string): SchemaNode {
  return resolveRef(load().files.get(ROOT_SCHEMA_ID)!, ref);
}

/** Schema of one resource kind (the record, or the singleton object). */
export function kindSchema(kind: ResourceKind): SchemaNode {
  const l = load();
  let byKind = kindSchemas.get(l);
  if (!byKind) {
    byKind = new Map();
    kindSchemas.set(l, byKind);
  }
  let node = byKind.get(kind);
  if (!node) {
    const def = recordDef(kind);
    node = def
      ? schemaNode(def.schema)
      : (l.files.get(ROOT_SCHEMA_ID)!['properties'][kind] as SchemaNode);
    byKind.set(kind, node);
  }
  return node;
}

/** Each kind's schema node, resolved once per loaded schema set: every config load asks for
 *  it per record (defaults, references, dependencies) and a `$ref` resolves through URL. */
const kindSchemas = new WeakMap<Loaded, Map<ResourceKind, SchemaNode>>();

/** The schema of the whole document. */
export function rootSchema(): SchemaNode {
  return load().files.get(ROOT_SCHEMA_ID)!;
}

/** Does `value` satisfy one of our simple `if` conditions (properties const/enum + required)? */
function matches(cond: SchemaNode, value: Record<string, unknown>): boolean {
  for (const name of (cond['required'] as string[] | undefined) ?? []) {
    if (!Object.hasOwn(value, name)) return false;
  }
  const props = (cond['properties'] ?? {}) as Record<string, SchemaNode>;
  for (const [name, rule] of Object.entries(props)) {
    if (!Object.hasOwn(value, name)) continue;
    const v = value[name];
    if ('const' in rule && v !== rule['const']) return false;
    if (Array.isArray(rule['enum']) && !rule['enum'].includes(v)) return false;
  }
  return true;
}

const shapeCache = new WeakMap<SchemaNode, Map<string, ObjectShape>>();
const discriminatorCache = new WeakMap<SchemaNode, string[]>();

/** Names of the members whose values choose conditional branches under `node`. */
function discriminators(node: SchemaNode): string[] {
  let d = discriminatorCache.get(node);
  if (d) return d;
  const names = new Set<string>();
  const visit = (n: SchemaNode, seen: Set<SchemaNode>): void => {
    if (seen.has(n)) return;
    seen.add(n);
    if (typeof n['$ref'] === 'string') visit(resolveRef(n, n['$ref']), seen);
    for (const sub of (n['allOf'] as SchemaNode[] | undefined) ?? []) visit(sub, seen);
    if (n['if']) {
      for (const k of Object.keys(n['if']['properties'] ?? {})) names.add(k);
      for (const k of (n['if']['required'] as string[] | undefined) ?? []) names.add(k);
      if (n['then']) visit(n['then'], seen);
      if (n['else']) visit(n['else'], seen);
    }
  };
  visit(node, new Set());
  d = [...names].sort();
  discriminatorCache.set(node, d);
  return d;
}

/** Members of the object described by `node`, for this particular `value`. Cached per
 *  schema node and the values of the members its conditions look at. */
export function objectShape(node: SchemaNode, value: Record<string, unknown>): ObjectShape {
  const disc = discriminators(node);
  let key = '';
  for (const name of disc) key += `${JSON.stringify(value[name]) ?? '-'}|`;
  let byKey = shapeCache.get(node);
  if (!byKey) {
    byKey = new Map();
    shapeCache.set(node, byKey);
  }
  const hit = byKey.get(key);
  if (hit) return hit;
  const shape: ObjectShape = {
    fields: new Map(),
    required: new Set(),
    strict: false,
    sameLength: [],
    defaults: [],
  };
  collect(node, value, shape, new Set());
  for (const [name, field] of shape.fields) {
    if (!field.forbidden && 'default' in field.schema) {
      shape.defaults.push({ name, value: field.schema['default'], field });
    }
  }
  byKey.set(key, shape);
  return shape;
}

function collect(
  node: SchemaNode,
  value: Record<string, unknown>,
  shape: ObjectShape,
  seen: Set<SchemaNode>,
): void {
  if (seen.has(node)) return;
  seen.add(node);
  if (typeof node['$ref'] === 'string') collect(resolveRef(node, node['$ref']), value, shape, seen);
  for (const sub of (node['allOf'] as SchemaNode[] | undefined) ?? []) {
    collect(sub, value, shape, seen);
  }
  if (node['additionalProperties'] === false) shape.strict = true;
  // One rule, or a list of them (arrays that must agree when present, beside ones that must
  // agree even when absent).
  const same = node['x-same-length'] as SameLength | SameLength[] | undefined;
  if (same) shape.sameLength.push(...(Array.isArray(same) ? same : [same]));
  for (const r of (node['required'] as string[] | undefined) ?? []) shape.required.add(r);
  const props = (node['properties'] ?? {}) as Record<string, SchemaNode | boolean>;
  for (const [name, sub] of Object.entries(props)) {
    const prev = shape.fields.get(name);
    if (sub === false) {
      if (prev) prev.forbidden = true;
      else shape.fields.set(name, { schema: {}, forbidden: true });
    } else if (sub !== true) {
      let schema = sub;
      if (prev) {
        // A later fragment refines the member (e.g. a conditional default); keep the base URL
        // of the fragment so a $ref inside it still resolves.
        schema = { ...prev.schema, ...sub };
        const b = load().base.get(sub);
        if (b) load().base.set(schema, b);
      }
      shape.fields.set(name, { schema, forbidden: prev?.forbidden ?? false });
    }
  }
  if (node['if']) {
    const branch = matches(node['if'], value) ? node['then'] : node['else'];
    if (branch) collect(branch, value, shape, seen);
  }
}

/** Schema of the items of an array field, with `$ref` left for objectShape to follow. */
export function itemsSchema(field: SchemaNode): SchemaNode | undefined {
  const items = field['items'];
  return items && typeof items === 'object' ? (items as SchemaNode) : undefined;
}

export function isPlainObject(v: unknown): v is Record<string, unknown> {
  return v !== null && typeof v === 'object' && !Array.isArray(v);
}

/** Where a walk along a path ends: every field passed, or where it stopped — at a member name
 *  the object's shape does not have (`unknownIn`), or past what the schema describes. */
interface PathWalk {
  fields: FieldInfo[];
  unknownIn?: ObjectShape;
  lost?: boolean;
}

function walkPath(node: SchemaNode, value: unknown, path: readonly (string | number)[]): PathWalk {
  const fields: FieldInfo[] = [];
  let cur: SchemaNode | undefined = node;
  let v: unknown = value;
  for (const seg of path) {
    if (!cur) return { fields, lost: true };
    if (typeof seg === 'number' || /^\d+$/.test(seg)) {
      cur = itemsSchema(cur);
      v = Array.isArray(v) ? v[Number(seg)] : undefined;
      continue;
    }
    const shape = objectShape(cur, isPlainObject(v) ? v : {});
    const f = shape.fields.get(seg);
    if (!f) return { fields, unknownIn: shape };
    fields.push(f);
    cur = f.schema;
    v = isPlainObject(v) ? v[seg] : undefined;
  }
  return { fields };
}

/** Follow `path` (member names and array indexes) from `node` over `value`; returns the
 *  field of the last member name on the path and every field passed on the way. */
export function fieldsAlong(
  node: SchemaNode,
  value: unknown,
  path: readonly (string | number)[],
): FieldInfo[] | undefined {
  const w = walkPath(node, value, path);
  return w.unknownIn || w.lost ? undefined : w.fields;
}

/** The member at `path` is one the schema does not know, in an object that has known members
 *  and accepts others (validate.ts warns that it is ignored). Members of a free-form object
 *  (no known members) are read by whoever takes the object, so they are not ignored. */
export function ignoredMember(
  node: SchemaNode,
  value: unknown,
  path: readonly (string | number)[],
): boolean {
  const shape = walkPath(node, value, path).unknownIn;
  return !!shape && shape.fields.size > 0 && !shape.strict;
}

/** Title of a node, following `$ref`. */
export function titleOf(node: SchemaNode): string | undefined {
  let n: SchemaNode | undefined = node;
  for (let hops = 0; n && hops < 8; hops++) {
    if (typeof n['title'] === 'string') return n['title'];
    n = typeof n['$ref'] === 'string' ? resolveRef(n, n['$ref']) : undefined;
  }
  return undefined;
}

// FieldRules for the reconciler, read from the annotations: `x-apply` says how a change
// applies (the deepest annotated member on the path wins), `x-secret` marks secrets.

/** Unknown members whose names look like secrets are masked anyway. */
const SECRET_NAME = /pass(word|phrase)?|secret|key$/i;

export const fieldRules: FieldRules = {
  applyClass(
    kind: ResourceKind,
    spec: Record<string, unknown>,
    path: (string | number)[],
  ): ApplyClass {
    const fields = fieldsAlong(kindSchema(kind), spec, path);
    if (!fields) return 'restart';
    for (let i = fields.length - 1; i >= 0; i--) {
      const cls = fields[i]!.schema['x-apply'];
      if (typeof cls === 'string') return cls as ApplyClass;
    }
    return 'restart';
  },
  isSecret(kind: ResourceKind, spec: Record<string, unknown>, path: (string | number)[]): boolean {
    const fields = fieldsAlong(kindSchema(kind), spec, path);
    if (!fields) {
      const last = [...path].reverse().find((p) => typeof p === 'string');
      return typeof last === 'string' && SECRET_NAME.test(last);
    }
    return fields.some((f) => f.schema['x-secret'] === true);
  },
  ignored(kind: ResourceKind, spec: Record<string, unknown>, path: (string | number)[]): boolean {
    return ignoredMember(kindSchema(kind), spec, path);
  },
};
