// Where each API kind lives in the config document and how a record is named in a URL:
// `/config/{kind}/{id}` for records in lists, `/config/{singleton}` for top-level objects.
// The kinds themselves are the table of src/config/kinds.ts.
import {
  isSingletonKind,
  RECORD_DEFS,
  type RecordDef,
  type SingletonKind,
} from '../../config/kinds.ts';
import type { ConfigDocument } from '../../config/types.ts';
import { HttpError } from '../../errors.ts';

/** A record kind as the API reads it: its list (`path`), `idField` and `nameField`. */
export type CollectionKind = RecordDef;

/** The collections, in the order /openapi.json lists them. */
export const COLLECTIONS: ReadonlyMap<string, CollectionKind> = new Map(
  [...RECORD_DEFS].sort((a, b) => a.listedAt - b.listedAt).map((d) => [d.kind, d]),
);

export type KindRef =
  | { type: 'collection'; def: CollectionKind }
  | { type: 'singleton'; kind: SingletonKind };

export function resolveKind(kind: string): KindRef {
  const def = COLLECTIONS.get(kind);
  if (def) return { type: 'collection', def };
  if (isSingletonKind(kind)) return { type: 'singleton', kind };
  throw new HttpError('NOT_FOUND', `Unknown config kind: ${kind}`);
}

export function isObject(v: unknown): v is Record<string, unknown> {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

/** The list of a collection in `doc` (empty when absent or not a list). */
export function listOf(doc: ConfigDocument, def: CollectionKind): Record<string, unknown>[] {
  let node: unknown = doc;
  for (const key of def.path) node = isObject(node) ? node[key] : undefined;
  return Array.isArray(node) ? (node as Record<string, unknown>[]) : [];
}

/** Put `list` in place, creating container objects; an empty list is removed. */
export function setList(
  doc: ConfigDocument,
  def: CollectionKind,
  list: Record<string, unknown>[],
): void {
  const parents: Record<string, unknown>[] = [doc];
  for (const key of def.path.slice(0, -1)) {
    const parent = parents[parents.length - 1]!;
    if (!isObject(parent[key])) parent[key] = {};
    parents.push(parent[key] as Record<string, unknown>);
  }
  const last = def.path[def.path.length - 1]!;
  const holder = parents[parents.length - 1]!;
  if (list.length > 0) {
    holder[last] = list;
    return;
  }
  delete holder[last];
  // Drop containers left empty, innermost first: absent and `{}` mean the same defaults.
  for (let i = parents.length - 1; i > 0; i--) {
    if (Object.keys(parents[i]!).length > 0) break;
    delete parents[i - 1]![def.path[i - 1]!];
  }
}

/** The identity of a record as it appears in a URL; undefined when it has none. */
export function recordId(def: CollectionKind, rec: Record<string, unknown>): string | undefined {
  const id = rec[def.idField];
  if (def.idField === 'login') return typeof id === 'string' && id !== '' ? id : undefined;
  if (typeof id === 'number' && id !== 0) return String(id);
  const name = def.nameField ? rec[def.nameField] : undefined;
  return typeof name === 'string' && name !== '' ? name : undefined;
}

/**
 * Index of the record named `id` in `list`, or -1. A numeric `id` names the record with that
 * `id`; for kinds with a name member, any other text names the record with that name.
 */
export function findRecord(
  def: CollectionKind,
  list: Record<string, unknown>[],
  id: string,
): number {
  if (def.idField === 'login') return list.findIndex((r) => r['login'] === id);
  if (/^[1-9][0-9]*$/.test(id)) {
    const i = list.findIndex((r) => r['id'] === Number(id));
    if (i >= 0) return i;
  }
  if (!def.nameField) return -1;
  const field = def.nameField;
  return list.findIndex((r) => r[field] === id);
}

/** The record or a 404 naming what was looked for. */
export function requireRecord(
  def: CollectionKind,
  list: Record<string, unknown>[],
  id: string,
): number {
  const i = findRecord(def, list, id);
  if (i < 0) throw new HttpError('NOT_FOUND', `No ${def.kind} ${id}`);
  return i;
}
