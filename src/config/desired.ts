// The desired state: one Resource per singleton object and per record (src/config/kinds.ts),
// each spec with every default applied, with the resources it refers to as its deps.
import { createHash } from 'node:crypto';
import { applyDefaultsAt } from './defaults.ts';
import { childLists, RECORD_DEFS, type RecordKind, recordKey, SINGLETON_KINDS } from './kinds.ts';
import { place } from './placement.ts';
import { listAt } from './references.ts';
import { refsOf } from './refs.ts';
import { isPlainObject, kindSchema } from './schema.ts';
import {
  type ConfigDocument,
  type DesiredState,
  type Resource,
  type ResourceRef,
  resourceId,
} from './types.ts';

type Rec = Record<string, unknown>;

/** The records a record refers to (its `x-ref` members with an id set). */
function depsOf(kind: RecordKind, spec: Rec): ResourceRef[] {
  const deps: ResourceRef[] = [];
  for (const { value, rule } of refsOf(kind, spec, '')) {
    if (typeof value !== 'number' || value <= 0) continue;
    const key = String(value);
    if (!deps.some((d) => d.kind === rule.kind && d.key === key))
      deps.push({ kind: rule.kind, key });
  }
  return deps;
}

/** Build the desired state of a valid document. */
export function buildDesired(
  doc: ConfigDocument,
  text: string,
  placement = place(doc),
): DesiredState {
  const resources = new Map<string, Resource>();
  for (const kind of SINGLETON_KINDS) {
    // Record lists inside the object are resources of their own, left out of its spec.
    const children = childLists(kind);
    const raw = isPlainObject(doc[kind]) ? { ...(doc[kind] as Rec) } : {};
    for (const child of children) delete raw[child];
    const spec = applyDefaultsAt(kindSchema(kind), raw) as Rec;
    for (const child of children) delete spec[child];
    const r: Resource = { kind, key: kind, name: kind, pointer: `/${kind}`, spec, deps: [] };
    resources.set(resourceId(r), r);
  }
  for (const def of RECORD_DEFS) {
    const schema = kindSchema(def.kind);
    for (const { rec, pointer } of listAt(doc, def.path)) {
      const spec = applyDefaultsAt(schema, rec) as Rec;
      const key = recordKey(def, spec);
      const label = spec[def.labelField];
      const r: Resource = {
        kind: def.kind,
        key,
        name: typeof label === 'string' && label !== '' ? label : `#${key}`,
        pointer,
        spec,
        deps: depsOf(def.kind, spec),
      };
      resources.set(resourceId(r), r);
    }
  }
  return {
    resources,
    hash: createHash('sha256').update(text).digest('hex'),
    placement,
  };
}
