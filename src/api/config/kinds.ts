// Where each API kind lives in the config document and how a record is named in a URL:
// `/config/{kind}/{id}` for records in lists, `/config/{singleton}` for top-level objects.
import {
  type ConfigDocument,
  type RecordKind,
  SINGLETON_KINDS,
  type SingletonKind,
} from '../../config/types.ts';
import { HttpError } from '../../errors.ts';

export interface CollectionKind {
  kind: RecordKind;
  /** Members leading to the list, e.g. `['dvr-storage-list', 'storage']`. */
  path: readonly string[];
  /** Member holding the identity: a positive integer `id`, or the user's `login`. */
  idField: 'id' | 'login';
  /** Name member: the identity of a record whose `id` is 0 or absent (streams, groups). */
  nameField?: string;
}

export const COLLECTIONS: ReadonlyMap<string, CollectionKind> = new Map(
  (
    [
      { kind: 'stream', path: ['stream'], idField: 'id', nameField: 'stream-name' },
      {
        kind: 'stream-adaptive',
        path: ['stream-adaptive'],
        idField: 'id',
        nameField: 'stream-name',
      },
      { kind: 'user', path: ['user'], idField: 'login' },
      { kind: 'dvb-adapter', path: ['dvb-adapter'], idField: 'id' },
      { kind: 'storage', path: ['dvr-storage-list', 'storage'], idField: 'id' },
      { kind: 'epg-source', path: ['epg', 'source'], idField: 'id' },
      { kind: 'epg-channel-set', path: ['epg-server', 'channel-set'], idField: 'id' },
      { kind: 'epg-login', path: ['epg-server', 'login'], idField: 'id' },
      { kind: 'cs-server', path: ['cs', 'server'], idField: 'id' },
    ] satisfies CollectionKind[]
  ).map((c) => [c.kind, c]),
);

const SINGLETONS: ReadonlySet<string> = new Set(SINGLETON_KINDS);

export type KindRef =
  | { type: 'collection'; def: CollectionKind }
  | { type: 'singleton'; kind: SingletonKind };

export function resolveKind(kind: string): KindRef {
  const def = COLLECTIONS.get(kind);
  if (def) return { type: 'collection', def };
  if (SINGLETONS.has(kind)) return { type: 'singleton', kind: kind as SingletonKind };
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
