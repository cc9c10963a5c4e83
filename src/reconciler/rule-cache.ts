// Memoised FieldRules for one plan() call. Asking the schema for every field of 10,000 new
// streams costs seconds; the answers depend only on the kind, the field's path with indexes
// removed, and the discriminators that select conditional field groups — the `type` of each
// record along the path and `mpts` / `mode` / `type` at the top of the record (spec 1's
// conditional members). Those make the cache key, so answers stay exact for the schema.
import type { FieldRules } from '../config/contracts.ts';
import type { ApplyClass, ResourceKind } from '../config/types.ts';
import { isPlainObject, type PathPart } from './values.ts';

type Obj = Record<string, unknown>;

const TOP_DISCRIMINATORS = ['mpts', 'mode', 'type'] as const;

export class RuleCache {
  private classes = new Map<string, ApplyClass>();
  private secrets = new Map<string, boolean>();
  private ignoredPaths = new Map<string, boolean>();

  constructor(private readonly rules: FieldRules) {}

  applyClass(kind: ResourceKind, spec: Obj, path: readonly PathPart[], key?: string): ApplyClass {
    return memo(this.classes, key ?? cacheKey(kind, spec, path), () =>
      this.rules.applyClass(kind, spec, [...path]),
    );
  }

  isSecret(kind: ResourceKind, spec: Obj, path: readonly PathPart[], key?: string): boolean {
    return memo(this.secrets, key ?? cacheKey(kind, spec, path), () =>
      this.rules.isSecret(kind, spec, [...path]),
    );
  }

  /** The member at `path` is unknown to the schema and ignored (its changes change nothing). */
  ignored(kind: ResourceKind, spec: Obj, path: readonly PathPart[], key?: string): boolean {
    const rule = this.rules.ignored?.bind(this.rules);
    if (!rule) return false;
    return memo(this.ignoredPaths, key ?? cacheKey(kind, spec, path), () =>
      rule(kind, spec, [...path]),
    );
  }
}

function memo<V>(cache: Map<string, V>, key: string, compute: () => V): V {
  let v = cache.get(key);
  if (v === undefined) {
    v = compute();
    cache.set(key, v);
  }
  return v;
}

/** The part of the key fixed for one resource; walkers append `keySegment`s to it. */
export function baseKey(kind: string, spec: Obj): string {
  let key = kind;
  for (const d of TOP_DISCRIMINATORS) key += `|${String(spec[d])}`;
  return `${key}|`;
}

/** Key segment of a member name or of an array item (`v` is the item). */
export function keySegment(p: PathPart, v: unknown): string {
  return typeof p === 'number' ? `[${isPlainObject(v) ? String(v['type']) : ''}]` : `.${p}`;
}

function cacheKey(kind: string, spec: Obj, path: readonly PathPart[]): string {
  let key = baseKey(kind, spec);
  let cur: unknown = spec;
  for (const p of path) {
    if (typeof p === 'number') {
      cur = Array.isArray(cur) ? cur[p] : undefined;
      key += `[${isPlainObject(cur) ? String(cur['type']) : ''}]`;
    } else {
      cur = isPlainObject(cur) ? cur[p] : undefined;
      key += `.${p}`;
    }
  }
  return key;
}
