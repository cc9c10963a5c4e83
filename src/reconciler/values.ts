// Small helpers over JSON values shared by the planner and the renderers: equality, field
// paths (`input[1].port`), JSON pointers and the human label of a resource.
import type { ResourceKind } from '../config/types.ts';

export type PathPart = string | number;
type Obj = Record<string, unknown>;

export function isPlainObject(v: unknown): v is Obj {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

/** Structural equality of JSON values; member order does not matter. */
export function deepEqual(a: unknown, b: unknown): boolean {
  if (a === b) return true;
  if (typeof a !== 'object' || typeof b !== 'object' || a === null || b === null) {
    // NaN never occurs in JSON; treat distinct primitives as different.
    return false;
  }
  if (Array.isArray(a)) {
    if (!Array.isArray(b) || a.length !== b.length) return false;
    for (let i = 0; i < a.length; i++) if (!deepEqual(a[i], b[i])) return false;
    return true;
  }
  if (Array.isArray(b)) return false;
  const ao = a as Obj;
  const bo = b as Obj;
  let n = 0;
  for (const k in ao) {
    if (ao[k] === undefined) continue;
    n++;
    if (!deepEqual(ao[k], bo[k])) return false;
  }
  for (const k in bo) if (bo[k] !== undefined) n--;
  return n === 0;
}

/** `['input', 1, 'port']` → `input[1].port`. */
export function formatPath(path: readonly PathPart[]): string {
  let s = '';
  for (const p of path) {
    if (typeof p === 'number') s += `[${p}]`;
    else s += s === '' ? p : `.${p}`;
  }
  return s;
}

/** `['input', 1, 'port']` under `/stream/4` → `/stream/4/input/1/port` (RFC 6901 escapes). */
export function toPointer(base: string, path: readonly PathPart[]): string {
  let s = base;
  for (const p of path) s += `/${String(p).replace(/~/g, '~0').replace(/\//g, '~1')}`;
  return s;
}

const NAME_KEY_PREFIX = 'name:';

/**
 * How a resource is named in plans, logs and errors: `storage "main" (id 1)`, `stream "news"`
 * (a stream keyed by name), `http-server` (a singleton).
 */
export function resourceLabel(kind: ResourceKind, key: string, name: string): string {
  if (key === kind) return kind;
  if (key.startsWith(NAME_KEY_PREFIX)) return `${kind} "${key.slice(NAME_KEY_PREFIX.length)}"`;
  const generated = name === '' || name === `#${key}` || name === key;
  if (!/^\d+$/.test(key)) return generated ? `${kind} "${key}"` : `${kind} "${name}" (${key})`;
  return generated ? `${kind} (id ${key})` : `${kind} "${name}" (id ${key})`;
}

/** A value as one line of text: strings bare or quoted, the rest as compact JSON. */
export function formatValue(v: unknown, quoteStrings = true): string {
  if (v === undefined) return '(none)';
  if (typeof v === 'string') return quoteStrings ? JSON.stringify(v) : v;
  return JSON.stringify(v);
}
