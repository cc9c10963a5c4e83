// The desired state: one Resource per singleton object and per record, each spec with every
// default applied, keyed as src/config/types.ts describes, with the resources it needs.
import { createHash } from 'node:crypto';
import { applyDefaultsAt } from './defaults.ts';
import { listAt } from './references.ts';
import { isPlainObject, kindSchema } from './schema.ts';
import {
  type ConfigDocument,
  type DesiredState,
  type RecordKind,
  type Resource,
  type ResourceRef,
  resourceId,
  SINGLETON_KINDS,
} from './types.ts';

type Rec = Record<string, unknown>;

/** Where each record kind lives, and which member names it. */
export const RECORD_LISTS: { kind: RecordKind; path: string[]; nameField: string }[] = [
  { kind: 'user', path: ['user'], nameField: 'login' },
  { kind: 'cs-server', path: ['cs', 'server'], nameField: 'name' },
  { kind: 'epg-source', path: ['epg', 'source'], nameField: 'name' },
  { kind: 'epg-channel-set', path: ['epg-server', 'channel-set'], nameField: 'name' },
  { kind: 'epg-login', path: ['epg-server', 'login'], nameField: 'login' },
  { kind: 'dvb-adapter', path: ['dvb-adapter'], nameField: 'name' },
  { kind: 'storage', path: ['dvr-storage-list', 'storage'], nameField: 'name' },
  { kind: 'stream', path: ['stream'], nameField: 'stream-name' },
  { kind: 'stream-adaptive', path: ['stream-adaptive'], nameField: 'stream-name' },
];

/** Members of singleton objects that hold record lists (those records are resources of
 *  their own, so they are left out of the singleton's spec). */
const CHILD_LISTS: Record<string, string[]> = {
  cs: ['server'],
  epg: ['source'],
  'epg-server': ['channel-set', 'login'],
  'dvr-storage-list': ['storage'],
};

/** Identity key of a record: its id, `name:<stream-name>` for a stream without id, the
 *  login for a user. */
export function recordKey(kind: RecordKind, rec: Rec): string {
  if (kind === 'user') return String(rec['login']);
  const id = rec['id'];
  if (kind === 'stream' && (id === undefined || id === 0)) return `name:${rec['stream-name']}`;
  return String(id);
}

const positive = (v: unknown): v is number => typeof v === 'number' && v > 0;

function depsOf(kind: RecordKind, spec: Rec): ResourceRef[] {
  const deps: ResourceRef[] = [];
  const add = (k: ResourceRef['kind'], id: number): void => {
    if (!deps.some((d) => d.kind === k && d.key === String(id)))
      deps.push({ kind: k, key: String(id) });
  };
  if (kind === 'stream') {
    if (positive(spec['dvr-storage'])) add('storage', spec['dvr-storage']);
    if (positive(spec['epg-source'])) add('epg-source', spec['epg-source']);
    for (const id of Array.isArray(spec['epg-channel-set']) ? spec['epg-channel-set'] : []) {
      if (positive(id)) add('epg-channel-set', id);
    }
    for (const inp of Array.isArray(spec['input']) ? spec['input'] : []) {
      if (!isPlainObject(inp)) continue;
      if (inp['type'] === 'dvb' && positive(inp['adapter-id']))
        add('dvb-adapter', inp['adapter-id']);
      if (inp['type'] === 'demuxer' && positive(inp['mpts-id'])) {
        add(inp['src'] === 1 ? 'dvb-adapter' : 'stream', inp['mpts-id']);
      }
    }
  } else if (kind === 'stream-adaptive') {
    for (const id of Array.isArray(spec['streams']) ? spec['streams'] : []) {
      if (positive(id)) add('stream', id);
    }
    if (positive(spec['dvr-storage'])) add('storage', spec['dvr-storage']);
  } else if (kind === 'epg-login') {
    if (positive(spec['channel-set'])) add('epg-channel-set', spec['channel-set']);
  }
  return deps;
}

/** Build the desired state of a valid document. */
export function buildDesired(doc: ConfigDocument, text: string): DesiredState {
  const resources = new Map<string, Resource>();
  for (const kind of SINGLETON_KINDS) {
    const raw = isPlainObject(doc[kind]) ? { ...(doc[kind] as Rec) } : {};
    for (const child of CHILD_LISTS[kind] ?? []) delete raw[child];
    const spec = applyDefaultsAt(kindSchema(kind), raw) as Rec;
    for (const child of CHILD_LISTS[kind] ?? []) delete spec[child];
    const r: Resource = { kind, key: kind, name: kind, pointer: `/${kind}`, spec, deps: [] };
    resources.set(resourceId(r), r);
  }
  for (const { kind, path, nameField } of RECORD_LISTS) {
    const schema = kindSchema(kind);
    for (const { rec, pointer } of listAt(doc, path)) {
      const spec = applyDefaultsAt(schema, rec) as Rec;
      const key = recordKey(kind, spec);
      const label = spec[nameField];
      const r: Resource = {
        kind,
        key,
        name: typeof label === 'string' && label !== '' ? label : `#${key}`,
        pointer,
        spec,
        deps: depsOf(kind, spec),
      };
      resources.set(resourceId(r), r);
    }
  }
  return { resources, hash: createHash('sha256').update(text).digest('hex') };
}
