// References between records, read from the schema annotation `x-ref` on the member holding
// the id: a kind name, a rule object, or `{ by: <member>, <value>: rule }` when a sibling
// member chooses the kind (a demuxer's `src`). On an array member each item is a reference.
import type { RecordKind } from './kinds.ts';
import {
  type FieldInfo,
  isPlainObject,
  itemsSchema,
  kindSchema,
  type ObjectShape,
  objectShape,
  resolveRef,
  type SchemaNode,
} from './schema.ts';

/** What a reference points at. */
export interface RefRule {
  kind: RecordKind;
  /** The target as errors name it, when not the kind's noun (`multiplex stream (src 0)`). */
  what?: string;
  /** A stream target must be a multiplex (true) or a single-programme stream (false). */
  mpts?: boolean;
  /** Why a multiplex target is refused (mpts false), when not an adaptive group's reason. */
  need?: string;
}

/** One reference found in a record. */
export interface FoundRef {
  /** JSON pointer of the value. */
  pointer: string;
  /** The member as errors name it: `dvr-storage`, `streams item`. */
  member: string;
  value: unknown;
  rule: RefRule;
}

type Rec = Record<string, unknown>;

/** Every reference in `rec`, a record of `kind` at `pointer`, in schema order. Defensive
 *  about types: it also runs on documents that failed the schema. */
export function refsOf(kind: RecordKind, rec: Rec, pointer: string): FoundRef[] {
  const out: FoundRef[] = [];
  walk(kindSchema(kind), rec, pointer, out);
  return out;
}

function walk(node: SchemaNode, value: Rec, pointer: string, out: FoundRef[]): void {
  const shape = objectShape(node, value);
  // A member a condition forbids keeps its reference: a dangling id is reported either way.
  for (const [name, field] of refFields(shape)) {
    const v = value[name];
    if (v === undefined) continue;
    const at = `${pointer}/${name}`;
    const annotation = field.schema['x-ref'];
    if (annotation !== undefined) {
      const rule = ruleFor(annotation, value, shape.fields.get(annotation['by'])?.schema);
      if (!rule) continue;
      if (field.schema['type'] !== 'array') out.push({ pointer: at, member: name, value: v, rule });
      else if (Array.isArray(v)) {
        v.forEach((item, j) => {
          out.push({ pointer: `${at}/${j}`, member: `${name} item`, value: item, rule });
        });
      }
      continue;
    }
    const items = itemsSchema(field.schema);
    if (items && Array.isArray(v)) {
      v.forEach((item, j) => {
        if (isPlainObject(item)) walk(items, item, `${at}/${j}`, out);
      });
    } else if (isPlainObject(v)) walk(field.schema, v, at, out);
  }
}

/** The rule of an annotation for this object; undefined when its selector picks none. */
function ruleFor(
  annotation: unknown,
  value: Rec,
  selector: SchemaNode | undefined,
): RefRule | undefined {
  if (typeof annotation === 'string') return { kind: annotation as RecordKind };
  if (!isPlainObject(annotation)) return undefined;
  if (typeof annotation['by'] !== 'string') return annotation as unknown as RefRule;
  const chosen = value[annotation['by']] ?? selector?.['default'];
  return ruleFor(annotation[JSON.stringify(chosen) ?? ''], value, undefined);
}

/** The members of a shape that hold a reference or have one below them, in schema order:
 *  a stream has some forty members and three or four of these, and every config load walks
 *  every record twice (references, dependencies). Cached per shape (shapes are cached). */
const refFieldsOf = new WeakMap<ObjectShape, [string, FieldInfo][]>();

function refFields(shape: ObjectShape): [string, FieldInfo][] {
  let list = refFieldsOf.get(shape);
  if (!list) {
    list = [...shape.fields].filter(([, f]) => holdsRef(f.schema, new Set()));
    refFieldsOf.set(shape, list);
  }
  return list;
}

/** `node` or anything it contains or points to carries an `x-ref` annotation. */
function holdsRef(node: SchemaNode, seen: Set<SchemaNode>): boolean {
  if (seen.has(node)) return false;
  seen.add(node);
  if ('x-ref' in node) return true;
  if (typeof node['$ref'] === 'string' && holdsRef(resolveRef(node, node['$ref']), seen)) {
    return true;
  }
  for (const v of Object.values(node)) {
    if (Array.isArray(v)) {
      if (v.some((x) => isPlainObject(x) && holdsRef(x as SchemaNode, seen))) return true;
    } else if (isPlainObject(v) && holdsRef(v as SchemaNode, seen)) return true;
  }
  return false;
}
