// The planner: a pure diff of the desired state against the running (actual) state. Which
// field applies how (hot / restart / replace / fixed), and which members are ignored, comes
// from FieldRules, never from code.
import type { FieldRules } from '../config/contracts.ts';
import type { ConfigIssue, DesiredState, Resource, ResourceKind } from '../config/types.ts';
import { baseKey, keySegment, RuleCache } from './rule-cache.ts';
import type { FieldChange, Plan, ResourceChange } from './types.ts';
import {
  deepEqual,
  formatPath,
  formatValue,
  isPlainObject,
  type PathPart,
  resourceLabel,
  toPointer,
} from './values.ts';

type Obj = Record<string, unknown>;

/** Collects the field changes of one resource while walking both specs. */
interface Walk {
  kind: ResourceKind;
  rules: RuleCache;
  before: Obj;
  after: Obj;
  fields: FieldChange[];
  unchanged: number;
}

/**
 * Compare desired with actual. Both sides carry defaults, so writing a default explicitly is
 * no change. Resources come out in config order, then destroyed ones in actual order.
 */
export function plan(
  desired: DesiredState,
  actual: Map<string, Resource>,
  rules: FieldRules,
  opts: { warnings?: ConfigIssue[] } = {},
): Plan {
  const changes: ResourceChange[] = [];
  const errors: ConfigIssue[] = [];
  const cache = new RuleCache(rules);
  const summary = { add: 0, change: 0, replace: 0, destroy: 0 };
  for (const [id, next] of desired.resources) {
    const prev = actual.get(id);
    if (!prev) {
      changes.push(wholeChange(next, 'create', cache));
      summary.add++;
      continue;
    }
    const ch = diffResource(prev, next, cache, errors);
    changes.push(ch);
    if (ch.action === 'update') summary.change++;
    else if (ch.action === 'replace') summary.replace++;
  }
  for (const [id, prev] of actual) {
    if (desired.resources.has(id)) continue;
    changes.push(wholeChange(prev, 'destroy', cache));
    summary.destroy++;
  }
  return { changes, errors, warnings: opts.warnings ? [...opts.warnings] : [], summary };
}

/** True when the plan would change nothing (and has no errors). */
export function planIsEmpty(p: Plan): boolean {
  const s = p.summary;
  return p.errors.length === 0 && s.add + s.change + s.replace + s.destroy === 0;
}

function diffResource(
  prev: Resource,
  next: Resource,
  rules: RuleCache,
  errors: ConfigIssue[],
): ResourceChange {
  const w: Walk = {
    kind: next.kind,
    rules,
    before: prev.spec,
    after: next.spec,
    fields: [],
    unchanged: 0,
  };
  diffMembers(w, prev.spec, next.spec, [], undefined);
  const forcesReplace: string[] = [];
  for (const f of w.fields) {
    if (f.apply === 'replace') forcesReplace.push(f.path);
    else if (f.apply === 'fixed') errors.push(fixedIssue(next, f));
  }
  const action = w.fields.length === 0 ? 'unchanged' : forcesReplace.length ? 'replace' : 'update';
  return {
    kind: next.kind,
    key: next.key,
    name: next.name,
    action,
    fields: w.fields,
    forcesReplace,
    unchanged: w.unchanged,
  };
}

function fixedIssue(res: Resource, f: FieldChange): ConfigIssue {
  const show = (v: unknown) => (f.secret ? '(sensitive)' : formatValue(v, false));
  return {
    severity: 'error',
    pointer: toPointer(res.pointer, parsePath(f.path)),
    rule: 'fixed',
    message:
      `${resourceLabel(res.kind, res.key, res.name)}: ${f.path} cannot change after creation ` +
      `(${show(f.before)} → ${show(f.after)}); remove the record and add one with a new id`,
    value: f.secret ? '(sensitive)' : f.after,
  };
}

/** Inverse of formatPath for the paths the planner makes (`input[1].port`). */
function parsePath(path: string): PathPart[] {
  const out: PathPart[] = [];
  for (const m of path.matchAll(/([^.[\]]+)|\[(\d+)\]/g)) {
    if (m[2] !== undefined) out.push(Number(m[2]));
    else if (m[1] !== undefined) out.push(m[1]);
  }
  return out;
}

function isRecordArray(v: unknown): v is Obj[] {
  if (!Array.isArray(v) || v.length === 0) return false;
  for (const e of v) if (!isPlainObject(e)) return false;
  return true;
}

/** An array of records on one side and nothing (or an empty array) on the other also counts. */
function recordArrays(a: unknown, b: unknown): boolean {
  const emptyOrAbsent = (v: unknown) => v === undefined || (Array.isArray(v) && v.length === 0);
  return (
    (isRecordArray(a) && (isRecordArray(b) || emptyOrAbsent(b))) ||
    (isRecordArray(b) && emptyOrAbsent(a))
  );
}

function diffMembers(w: Walk, a: Obj, b: Obj, path: PathPart[], scope: string | undefined): void {
  for (const k in b) diffMember(w, a[k], b[k], path, k, scope);
  for (const k in a) if (!(k in b)) diffMember(w, a[k], undefined, path, k, scope);
}

function diffMember(
  w: Walk,
  av: unknown,
  bv: unknown,
  path: PathPart[],
  k: string,
  scope: string | undefined,
): void {
  if (av === bv) {
    if (av !== undefined) w.unchanged += countLeaves(av);
    return;
  }
  // A member the schema does not know is ignored by everything that runs the record: a change
  // to it changes nothing (the config's warnings name it).
  if (w.rules.ignored(w.kind, bv !== undefined ? w.after : w.before, [...path, k])) return;
  if (recordArrays(av, bv)) {
    diffRecordArray(w, (av ?? []) as Obj[], (bv ?? []) as Obj[], [...path, k], scope);
  } else if (isPlainObject(av) && isPlainObject(bv)) {
    diffMembers(w, av, bv, [...path, k], scope);
  } else if (deepEqual(av, bv)) {
    w.unchanged += countLeaves(av);
  } else {
    w.fields.push(fieldChange(w, [...path, k], av, bv, scope));
  }
}

/** Records compared index by index; a change inside `input[1]` restarts `input[1]` only. */
function diffRecordArray(w: Walk, a: Obj[], b: Obj[], path: PathPart[], scope: string | undefined) {
  const n = Math.max(a.length, b.length);
  const arrayClass = w.rules.applyClass(w.kind, w.after, path);
  for (let i = 0; i < n; i++) {
    const ai = a[i];
    const bi = b[i];
    const p = [...path, i];
    const itemScope = scope ?? formatPath(p);
    if (ai !== undefined && bi !== undefined) {
      diffMembers(w, ai, bi, p, itemScope);
      continue;
    }
    // A record added or removed: one field for the whole record.
    const spec = bi !== undefined ? w.after : w.before;
    const apply = arrayClass === 'replace' || arrayClass === 'fixed' ? arrayClass : 'restart';
    const fc: FieldChange = { path: formatPath(p), before: ai, after: bi, apply, scope: itemScope };
    const secrets: string[] = [];
    collectSecrets(w, spec, p, (ai ?? bi) as Obj, [], secrets);
    if (secrets.length) fc.secretPaths = secrets;
    w.fields.push(fc);
  }
}

function collectSecrets(
  w: Walk,
  spec: Obj,
  base: PathPart[],
  v: unknown,
  sub: PathPart[],
  out: string[],
): void {
  if (isPlainObject(v)) {
    for (const k in v) collectSecrets(w, spec, base, v[k], [...sub, k], out);
  } else if (isRecordArray(v)) {
    for (let i = 0; i < v.length; i++) collectSecrets(w, spec, base, v[i], [...sub, i], out);
  } else if (sub.length && w.rules.isSecret(w.kind, spec, [...base, ...sub])) {
    out.push(formatPath(sub));
  }
}

function fieldChange(
  w: Walk,
  p: PathPart[],
  before: unknown,
  after: unknown,
  scope: string | undefined,
): FieldChange {
  const spec = after !== undefined ? w.after : w.before;
  const apply = w.rules.applyClass(w.kind, spec, p);
  const fc: FieldChange = { path: formatPath(p), before, after, apply };
  if (apply === 'restart' && scope) fc.scope = scope;
  if (w.rules.isSecret(w.kind, spec, p)) fc.secret = true;
  return fc;
}

/** Leaf attributes of a value as the planner counts them (records and objects flattened). */
function countLeaves(v: unknown): number {
  if (isPlainObject(v)) {
    let n = 0;
    for (const k in v) if (v[k] !== undefined) n += countLeaves(v[k]);
    return n;
  }
  if (isRecordArray(v)) {
    let n = 0;
    for (const e of v) n += countLeaves(e);
    return n;
  }
  return 1;
}

/** A create (every set field, as after) or a destroy (every field, as before). */
function wholeChange(res: Resource, action: 'create' | 'destroy', rules: RuleCache) {
  const fields: FieldChange[] = [];
  const path: PathPart[] = [];
  // Cache keys built while descending, so each leaf costs one concatenation.
  const walk = (v: unknown, name: string, key: string) => {
    if (isPlainObject(v)) {
      for (const k in v) {
        if (v[k] === undefined) continue;
        path.push(k);
        const sub = key + keySegment(k, v[k]);
        // An ignored member is neither created nor destroyed with the record.
        if (!rules.ignored(res.kind, res.spec, path, sub))
          walk(v[k], name === '' ? k : `${name}.${k}`, sub);
        path.pop();
      }
    } else if (isRecordArray(v)) {
      for (let i = 0; i < v.length; i++) {
        path.push(i);
        walk(v[i], `${name}[${i}]`, key + keySegment(i, v[i]));
        path.pop();
      }
    } else {
      const fc: FieldChange = {
        path: name,
        before: action === 'destroy' ? v : undefined,
        after: action === 'create' ? v : undefined,
        apply: rules.applyClass(res.kind, res.spec, path, key),
      };
      if (rules.isSecret(res.kind, res.spec, path, key)) fc.secret = true;
      fields.push(fc);
    }
  };
  walk(res.spec, '', baseKey(res.kind, res.spec));
  const change: ResourceChange = {
    kind: res.kind,
    key: res.key,
    name: res.name,
    action,
    fields,
    forcesReplace: [],
    unchanged: 0,
  };
  return change;
}
