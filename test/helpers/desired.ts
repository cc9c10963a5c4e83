// Hand-built desired states and a table-driven FieldRules for reconciler and driver tests,
// independent of the config loader.
import { createHash } from 'node:crypto';
import type { FieldRules } from '../../src/config/contracts.ts';
import { applyDefaultsAt } from '../../src/config/defaults.ts';
import { kindSchema } from '../../src/config/schema.ts';
import type {
  ApplyClass,
  DesiredState,
  Resource,
  ResourceKind,
  ResourceRef,
} from '../../src/config/types.ts';
import { resourceId } from '../../src/config/types.ts';
import type { SpecOf } from '../../src/reconciler/driver.ts';

export interface ResInit {
  kind: ResourceKind;
  key: string;
  name?: string;
  spec: Record<string, unknown>;
  deps?: ResourceRef[];
  pointer?: string;
}

export function res(init: ResInit): Resource {
  return {
    kind: init.kind,
    key: init.key,
    name: init.name ?? String(init.spec['stream-name'] ?? init.spec['name'] ?? `#${init.key}`),
    pointer: init.pointer ?? `/${init.kind}/${init.key}`,
    spec: init.spec,
    deps: init.deps ?? [],
  };
}

/** A resource as the reconciler hands it to its kind's driver: every schema default applied
 *  to `spec` (src/config/desired.ts does the same), typed as the driver reads it. */
export function applied<K extends ResourceKind>(
  kind: K,
  key: string,
  spec: Record<string, unknown>,
): Resource<SpecOf<K>> {
  const full = applyDefaultsAt(kindSchema(kind), spec) as SpecOf<K>;
  return { ...res({ kind, key, spec }), spec: full };
}

/** A stream resource keyed by id with a few of the spec's defaults filled in. */
export function stream(
  id: number,
  name: string,
  extra: Record<string, unknown> = {},
  deps: ResourceRef[] = [],
): Resource {
  return res({
    kind: 'stream',
    key: String(id),
    name,
    pointer: `/stream/${id - 1}`,
    spec: {
      id,
      mpts: false,
      'stream-name': name,
      pause: true,
      'stream-timeout': 30000000,
      'enable-alert': true,
      ...extra,
    },
    deps,
  });
}

export function desired(resources: Resource[], hash?: string): DesiredState {
  const map = new Map<string, Resource>();
  for (const r of resources) map.set(resourceId(r), r);
  const h =
    hash ??
    createHash('sha256')
      .update(JSON.stringify(resources.map((r) => [r.kind, r.key, r.spec])))
      .digest('hex');
  return { resources: map, hash: h };
}

/** The actual-state map a reconciler would hold after applying `resources`. */
export function actualOf(resources: Resource[]): Map<string, Resource> {
  return new Map(resources.map((r) => [resourceId(r), structuredClone(r)]));
}

/** Apply classes by `kind` and field path with indexes removed (`input.port`); default hot. */
const CLASSES: Record<string, ApplyClass> = {
  'stream/mpts': 'replace',
  'stream/input': 'restart',
  'stream/input.type': 'restart',
  'stream/input.port': 'restart',
  'stream/input.address': 'restart',
  'stream/input.passphrase': 'restart',
  'stream/output': 'restart',
  'stream/output.port': 'restart',
  'stream/stream-type': 'restart',
  'storage/dir-path': 'fixed',
  'http-server/port': 'restart',
};

const SECRETS = new Set(['password', 'passphrase', 'biss-key', 'secret']);

export const fakeRules: FieldRules = {
  applyClass(kind, _spec, path) {
    const key = `${kind}/${path.filter((p) => typeof p === 'string').join('.')}`;
    return CLASSES[key] ?? 'hot';
  },
  isSecret(_kind, _spec, path) {
    const last = path[path.length - 1];
    return typeof last === 'string' && SECRETS.has(last);
  },
};
