// Renderers of a Plan: Terraform-style text for people (`sluice reconcile --plan`) and JSON for
// tools (`--json`, the API). Both mask secrets; neither decides anything.
import type { ConfigIssue } from '../config/types.ts';
import type { Action, FieldChange, Plan, ResourceChange } from './types.ts';
import { formatValue, isPlainObject, resourceLabel } from './values.ts';

export const SENSITIVE = '(sensitive)';

const SYMBOL: Record<Exclude<Action, 'unchanged'>, string> = {
  create: '+',
  update: '~',
  replace: '-/+',
  destroy: '-',
};

const LEGEND: Record<Exclude<Action, 'unchanged'>, string> = {
  create: 'create',
  update: 'update in place',
  replace: 'replace (destroy, then create)',
  destroy: 'destroy',
};

const VERB: Record<Exclude<Action, 'unchanged'>, string> = {
  create: 'will be created',
  update: 'will be updated in place',
  replace: 'must be replaced',
  destroy: 'will be destroyed',
};

const ANSI = {
  reset: '\x1b[0m',
  bold: '\x1b[1m',
  green: '\x1b[32m',
  yellow: '\x1b[33m',
  red: '\x1b[31m',
  magenta: '\x1b[35m',
} as const;

const ACTION_COLOR: Record<Exclude<Action, 'unchanged'>, keyof typeof ANSI> = {
  create: 'green',
  update: 'yellow',
  replace: 'magenta',
  destroy: 'red',
};

const ACTION_ORDER: Exclude<Action, 'unchanged'>[] = ['create', 'update', 'replace', 'destroy'];

/** Text of a plan, one block per changed resource, ending with the summary line. */
export function renderPlanText(plan: Plan, opts: { color?: boolean } = {}): string {
  const c = (color: keyof typeof ANSI, s: string) =>
    opts.color ? `${ANSI[color]}${s}${ANSI.reset}` : s;
  const shown = plan.changes.filter((ch) => ch.action !== 'unchanged');
  const out: string[] = [];

  if (shown.length > 0) {
    const used = ACTION_ORDER.filter((a) => shown.some((ch) => ch.action === a));
    out.push('Resource actions are indicated with the following symbols:');
    for (const a of used) {
      out.push(`${' '.repeat(5 - SYMBOL[a].length)}${c(ACTION_COLOR[a], SYMBOL[a])} ${LEGEND[a]}`);
    }
    out.push('', 'sluice will perform the following actions:', '');
    for (const ch of shown) out.push(...renderBlock(ch, c), '');
  }

  for (const w of plan.warnings) out.push(`${c('yellow', 'Warning:')} ${issueLine(w)}`);
  for (const e of plan.errors) out.push(`${c('red', 'Error:')} ${issueLine(e)}`);
  if (plan.warnings.length || plan.errors.length) out.push('');

  if (plan.errors.length) {
    const n = plan.errors.length;
    out.push(
      c(
        'bold',
        `Plan refused: ${n} error${n === 1 ? '' : 's'}. Nothing will be applied; ` +
          'the running state stays on the last good configuration.',
      ),
    );
  } else if (shown.length === 0) {
    out.push(c('bold', 'No changes.') + ' The running state matches the configuration.');
  } else {
    const s = plan.summary;
    out.push(
      c(
        'bold',
        `Plan: ${s.add} to add, ${s.change} to change, ${s.replace} to replace, ` +
          `${s.destroy} to destroy.`,
      ),
    );
  }
  return `${out.join('\n')}\n`;
}

function issueLine(i: ConfigIssue): string {
  const at = i.pointer
    ? ` (at ${i.pointer}${i.line ? `, line ${i.line}:${i.column ?? 1}` : ''})`
    : '';
  return `${i.message}${at}`;
}

function renderBlock(
  ch: ResourceChange,
  c: (color: keyof typeof ANSI, s: string) => string,
): string[] {
  const action = ch.action as Exclude<Action, 'unchanged'>;
  const label = resourceLabel(ch.kind, ch.key, ch.name);
  const sym = ' '.repeat(3 - SYMBOL[action].length) + c(ACTION_COLOR[action], SYMBOL[action]);
  const lines = [c('bold', `  # ${label} ${VERB[action]}`), `${sym} ${label} {`];
  const forces = new Set(ch.forcesReplace);
  for (const f of ch.fields) {
    let line: string;
    if (action === 'create') line = `${c('green', '+')} ${f.path}: ${show(f, f.after)}`;
    else if (action === 'destroy') line = `${c('red', '-')} ${f.path}: ${show(f, f.before)}`;
    else if (f.before === undefined) line = `${c('green', '+')} ${f.path}: ${show(f, f.after)}`;
    else if (f.after === undefined) line = `${c('red', '-')} ${f.path}: ${show(f, f.before)}`;
    else line = `${c('yellow', '~')} ${f.path}: ${show(f, f.before)} → ${show(f, f.after)}`;
    if (forces.has(f.path)) line += c('red', ' # forces replacement');
    else if (f.apply === 'fixed') line += c('red', ' # cannot change after creation');
    else if (action === 'update' && f.apply === 'restart') {
      line += ` (restarts ${f.scope ?? `the whole ${ch.kind}`})`;
    }
    lines.push(`      ${line}`);
  }
  if (ch.unchanged > 0) {
    const s = ch.unchanged === 1 ? 'attribute' : 'attributes';
    lines.push(`        # (${ch.unchanged} unchanged ${s} hidden)`);
  }
  lines.push('    }');
  return lines;
}

/** One value of a field, masked when secret. */
function show(f: FieldChange, v: unknown): string {
  if (v === undefined) return '(none)';
  if (f.secret) return SENSITIVE;
  if (f.secretPaths?.length) return formatValue(maskPaths(v, f.secretPaths));
  return formatValue(v);
}

/** A copy of `v` with the values at `paths` (`passphrase`, `peer[0].secret`) masked. */
function maskPaths(v: unknown, paths: string[]): unknown {
  const copy = structuredClone(v);
  for (const p of paths) {
    const parts = [...p.matchAll(/([^.[\]]+)|\[(\d+)\]/g)].map((m) =>
      m[2] !== undefined ? Number(m[2]) : (m[1] as string),
    );
    let cur: unknown = copy;
    for (let i = 0; i < parts.length - 1; i++) {
      cur = (cur as Record<string | number, unknown> | undefined)?.[parts[i] as string];
    }
    const last = parts[parts.length - 1];
    if (last !== undefined && (isPlainObject(cur) || Array.isArray(cur))) {
      (cur as Record<string | number, unknown>)[last] = SENSITIVE;
    }
  }
  return copy;
}

/** A field as JSON output carries it: values masked, apply class and scope kept. */
function fieldJson(f: FieldChange): Record<string, unknown> {
  const mask = (v: unknown) => {
    if (v === undefined) return null;
    if (f.secret) return SENSITIVE;
    return f.secretPaths?.length ? maskPaths(v, f.secretPaths) : v;
  };
  const o: Record<string, unknown> = {
    path: f.path,
    before: mask(f.before),
    after: mask(f.after),
    apply: f.apply,
  };
  if (f.scope) o['scope'] = f.scope;
  if (f.secret || f.secretPaths?.length) o['sensitive'] = true;
  return o;
}

/** Machine-readable plan: changed resources only, secrets masked, plus counts and issues. */
export function planToJson(plan: Plan): Record<string, unknown> {
  const shown = plan.changes.filter((ch) => ch.action !== 'unchanged');
  return {
    format: 'sluice-plan/1',
    changed: shown.length > 0,
    valid: plan.errors.length === 0,
    summary: { ...plan.summary, unchanged: plan.changes.length - shown.length },
    changes: shown.map((ch) => ({
      kind: ch.kind,
      key: ch.key,
      name: ch.name,
      label: resourceLabel(ch.kind, ch.key, ch.name),
      action: ch.action,
      fields: ch.fields.map(fieldJson),
      forcesReplace: ch.forcesReplace,
      unchanged: ch.unchanged,
    })),
    errors: plan.errors,
    warnings: plan.warnings,
  };
}

export function renderPlanJson(plan: Plan): string {
  return `${JSON.stringify(planToJson(plan), null, 2)}\n`;
}
