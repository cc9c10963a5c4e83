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

/** Assign an own member, also one named __proto__ (which plain assignment would turn into
 *  the object's prototype). */
export function setOwn(o: Record<string, unknown>, k: string, v: unknown): void {
  if (k === '__proto__') {
    Object.defineProperty(o, k, { value: v, enumerable: true, writable: true, configurable: true });
  } else o[k] = v;
}

/** Deep copy of a JSON value (much cheaper than structuredClone for small values). */
export function clone<T>(v: T): T {
  if (Array.isArray(v)) return v.map(clone) as T;
  if (v !== null && typeof v === 'object') {
    const out: Record<string, unknown> = {};
    for (const [k, x] of Object.entries(v)) setOwn(out, k, clone(x));
    return out as T;
  }
  return v;
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
  for (const k in value) {
    const v = value[k];
    const f = shape.fields.get(k);
    setOwn(
      out,
      k,
      f && v !== null && typeof v === 'object' ? applyDefaultsAt(f.schema, v) : clone(v),
    );
  }
  for (const d of shape.defaults) {
    if (Object.hasOwn(value, d.name)) continue;
    const v = d.value;
    out[d.name] =
      v !== null && typeof v === 'object' ? applyDefaultsAt(d.field.schema, clone(v)) : v;
  }
  return out;
}

/** The whole document with every default applied (singletons present even when absent). */
export function applyDefaults(doc: ConfigDocument): ConfigDocument {
  return applyDefaultsAt(rootSchema(), doc) as ConfigDocument;
}
