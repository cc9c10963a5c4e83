// Defaults on reading: fill every member the schema gives a default, following conditional
// groups (an input's type, a stream's mpts, an adapter's mode/type). minimal.ts undoes it.
import { isPlainObject, itemsSchema, objectShape, rootSchema, type SchemaNode } from './schema.ts';
import type { ConfigDocument } from './types.ts';

export function deepEqual(a: unknown, b: unknown): boolean {
  if (a === b) return true;
  if (Array.isArray(a)) {
    if (!Array.isArray(b) || a.length !== b.length) return false;
    for (let i = 0; i < a.length; i++) if (!deepEqual(a[i], b[i])) return false;
    return true;
  }
  if (isPlainObject(a) && isPlainObject(b)) {
    const ka = Object.keys(a);
    if (ka.length !== Object.keys(b).length) return false;
    for (const k of ka) if (!Object.hasOwn(b, k) || !deepEqual(a[k], b[k])) return false;
    return true;
  }
  return false;
}

function clone<T>(v: T): T {
  return v !== null && typeof v === 'object' ? structuredClone(v) : v;
}

/** `value` with every default of `node` filled in, recursively (a new value). Members set
 *  keep their order; defaults follow in schema order. */
export function applyDefaultsAt(node: SchemaNode, value: unknown): unknown {
  if (Array.isArray(value)) {
    const items = itemsSchema(node);
    return items ? value.map((el) => applyDefaultsAt(items, el)) : clone(value);
  }
  if (!isPlainObject(value)) return value;
  const shape = objectShape(node, value);
  const out: Record<string, unknown> = {};
  for (const [k, v] of Object.entries(value)) {
    const f = shape.fields.get(k);
    out[k] = f && v !== null && typeof v === 'object' ? applyDefaultsAt(f.schema, v) : clone(v);
  }
  for (const [k, f] of shape.fields) {
    if (f.forbidden || Object.hasOwn(out, k) || !('default' in f.schema)) continue;
    const d = f.schema['default'];
    out[k] = d !== null && typeof d === 'object' ? applyDefaultsAt(f.schema, clone(d)) : d;
  }
  return out;
}

/** The whole document with every default applied (singletons present even when absent). */
export function applyDefaults(doc: ConfigDocument): ConfigDocument {
  return applyDefaultsAt(rootSchema(), doc) as ConfigDocument;
}
