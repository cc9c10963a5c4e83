// The minimal form written to disk: every member equal to its default dropped, recursively,
// inside records too (by the record's own type), key order kept.
import { deepEqual, setOwn } from './defaults.ts';
import { isPlainObject, itemsSchema, objectShape, rootSchema, type SchemaNode } from './schema.ts';
import type { ConfigDocument } from './types.ts';

/** `value` without the members equal to their default, recursively; required members and
 *  members the schema does not know are always kept; key order is kept. */
export function elideDefaultsAt(node: SchemaNode, value: unknown): unknown {
  if (Array.isArray(value)) {
    const items = itemsSchema(node);
    return items ? value.map((el) => elideDefaultsAt(items, el)) : value;
  }
  if (!isPlainObject(value)) return value;
  const shape = objectShape(node, value);
  const out: Record<string, unknown> = {};
  for (const [k, v] of Object.entries(value)) {
    const f = shape.fields.get(k);
    if (!f || f.forbidden) {
      setOwn(out, k, v);
      continue;
    }
    const min = v !== null && typeof v === 'object' ? elideDefaultsAt(f.schema, v) : v;
    if (!shape.required.has(k) && 'default' in f.schema && deepEqual(min, f.schema['default'])) {
      continue;
    }
    out[k] = min;
  }
  return out;
}

/** The minimal form of a document: only what differs from the defaults. */
export function elideDefaults(doc: ConfigDocument): ConfigDocument {
  return elideDefaultsAt(rootSchema(), doc) as ConfigDocument;
}
