// The one table of resource kinds: where each lives in the config file, how a record is
// keyed and labelled, its apply level and the words errors use for it. Desired state,
// references, the /config API and the reconciler's order all read it; references themselves
// are schema annotations (`x-ref`, read by src/config/refs.ts).

/** A top-level object: one resource keyed by its member name (`/server`). */
export interface SingletonKindDef {
  kind: string;
  /** Apply level (see levels below). */
  level: number;
}

/** Records in a list (`/stream/4`, `/dvr-storage-list/storage/0`): one resource each. */
export interface RecordKindDef {
  kind: string;
  /** Members leading to the list, e.g. `['dvr-storage-list', 'storage']`. */
  path: readonly string[];
  /** The record's schema, as a `$ref` from the root schema. */
  schema: string;
  /** Member holding the identity: a positive integer `id`, or the user's `login`. */
  idField: 'id' | 'login';
  /** Member naming a record whose `id` is 0 or absent (keyed `name:<stream-name>`). */
  nameField?: 'stream-name';
  /** Member whose text labels the record in plans and logs (`#<key>` when empty). */
  labelField: string;
  /** Apply level (see levels below). */
  level: number;
  /** What errors call one record: `duplicate archive storage id 3`. */
  noun: string;
  /** What errors call the list a reference points into (kinds that are referenced). */
  where?: string;
  /** Members that must be unique across the list (0 and '' may repeat). */
  unique: readonly string[];
  /** Position in the list of collections /openapi.json shows. */
  listedAt: number;
}

// Levels: server-wide settings and accounts (0); storages, adapters, EPG and billing records
// (1); streams (2); adaptive groups (3). A record's references push it further down.
const SETTINGS = 0;
const SUPPORT = 1;
const STREAMS = 2;
const GROUPS = 3;

/** Top-level objects, in the order the desired state lists them. */
export const SINGLETON_DEFS = [
  { kind: 'server', level: SETTINGS },
  { kind: 'cluster', level: SETTINGS },
  { kind: 'user-default', level: SETTINGS },
  { kind: 'web-server', level: SETTINGS },
  { kind: 'http-server', level: SETTINGS },
  { kind: 'epg-server', level: SETTINGS },
  { kind: 'cs', level: SETTINGS },
  { kind: 'mosaic', level: SETTINGS },
  { kind: 'epg', level: SETTINGS },
  { kind: 'alerter', level: SETTINGS },
  { kind: 'acme', level: SETTINGS },
  { kind: 'dvr-storage-list', level: SETTINGS },
] as const satisfies readonly SingletonKindDef[];

/** Record kinds, in the order the desired state lists them. */
export const RECORD_DEFS = [
  {
    kind: 'user',
    path: ['user'],
    schema: 'user.schema.json',
    idField: 'login',
    labelField: 'login',
    level: SETTINGS,
    noun: 'user',
    unique: ['login'],
    listedAt: 2,
  },
  {
    kind: 'cs-server',
    path: ['cs', 'server'],
    schema: 'cs.schema.json#/$defs/server',
    idField: 'id',
    labelField: 'name',
    level: SUPPORT,
    noun: 'billing server',
    unique: ['id', 'name'],
    listedAt: 8,
  },
  {
    kind: 'epg-source',
    path: ['epg', 'source'],
    schema: 'epg.schema.json#/$defs/source',
    idField: 'id',
    labelField: 'name',
    level: SUPPORT,
    noun: 'EPG source',
    where: 'epg.source record',
    unique: ['id', 'name'],
    listedAt: 5,
  },
  {
    kind: 'epg-channel-set',
    path: ['epg-server', 'channel-set'],
    schema: 'epg-server.schema.json#/$defs/channel-set',
    idField: 'id',
    labelField: 'name',
    level: SUPPORT,
    noun: 'EPG channel set',
    where: 'epg-server.channel-set record',
    unique: ['id', 'name'],
    listedAt: 6,
  },
  {
    kind: 'epg-login',
    path: ['epg-server', 'login'],
    schema: 'epg-server.schema.json#/$defs/login',
    idField: 'id',
    labelField: 'login',
    level: SUPPORT,
    noun: 'EPG login',
    unique: ['id', 'login'],
    listedAt: 7,
  },
  {
    kind: 'dvb-adapter',
    path: ['dvb-adapter'],
    schema: 'dvb-adapter.schema.json',
    idField: 'id',
    labelField: 'name',
    level: SUPPORT,
    noun: 'tuner adapter',
    where: 'dvb-adapter record',
    unique: ['id', 'name'],
    listedAt: 3,
  },
  {
    kind: 'storage',
    path: ['dvr-storage-list', 'storage'],
    schema: 'storage.schema.json#/$defs/storage',
    idField: 'id',
    labelField: 'name',
    level: SUPPORT,
    noun: 'archive storage',
    where: 'dvr-storage-list.storage record',
    unique: ['id', 'name', 'dir-path'],
    listedAt: 4,
  },
  {
    kind: 'stream',
    path: ['stream'],
    schema: 'stream.schema.json',
    idField: 'id',
    nameField: 'stream-name',
    labelField: 'stream-name',
    level: STREAMS,
    noun: 'stream',
    where: 'stream',
    unique: ['id'],
    listedAt: 0,
  },
  {
    kind: 'stream-adaptive',
    path: ['stream-adaptive'],
    schema: 'stream-adaptive.schema.json',
    idField: 'id',
    nameField: 'stream-name',
    labelField: 'stream-name',
    level: GROUPS,
    noun: 'adaptive stream',
    unique: ['id'],
    listedAt: 1,
  },
] as const satisfies readonly RecordKindDef[];

export type SingletonKind = (typeof SINGLETON_DEFS)[number]['kind'];
export type RecordKind = (typeof RECORD_DEFS)[number]['kind'];
export type ResourceKind = SingletonKind | RecordKind;

export const SINGLETON_KINDS: readonly SingletonKind[] = SINGLETON_DEFS.map((d) => d.kind);
export const RECORD_KINDS: readonly RecordKind[] = RECORD_DEFS.map((d) => d.kind);

/** One record kind's row, typed loosely enough to read optional columns. */
export type RecordDef = RecordKindDef & { kind: RecordKind };

const RECORDS: ReadonlyMap<string, RecordDef> = new Map(RECORD_DEFS.map((d) => [d.kind, d]));
const SINGLETONS: ReadonlySet<string> = new Set(SINGLETON_KINDS);
const LEVELS: ReadonlyMap<string, number> = new Map(
  [...SINGLETON_DEFS, ...RECORD_DEFS].map((d) => [d.kind, d.level]),
);

/** The row of a record kind, or undefined for a singleton or an unknown name. */
export function recordDef(kind: string): RecordDef | undefined {
  return RECORDS.get(kind);
}

export function isSingletonKind(kind: string): kind is SingletonKind {
  return SINGLETONS.has(kind);
}

/** Apply level of a kind (unknown kinds: the first level). */
export function kindLevel(kind: string): number {
  return LEVELS.get(kind) ?? SETTINGS;
}

/** Record lists held inside a singleton (their records are resources of their own). */
export function childLists(singleton: SingletonKind): string[] {
  return RECORD_DEFS.filter((d) => d.path.length === 2 && d.path[0] === singleton).map(
    (d) => d.path[1]!,
  );
}

/** Identity key of a record: its id; `name:<stream-name>` when a named kind has no id; the
 *  login for a user. */
export function recordKey(def: RecordDef, rec: Record<string, unknown>): string {
  const id = rec[def.idField];
  if (def.idField === 'login') return String(id);
  if (def.nameField && (id === undefined || id === 0)) return `name:${rec[def.nameField]}`;
  return String(id);
}
