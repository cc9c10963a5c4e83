// The saved plan of `sluice reconcile --plan --out FILE`, read back by `--apply FILE`: the plan
// as it was shown, the desired document it was made from, and the ETag of the running config
// it was made against (the If-Match of the apply).
import { readFile } from 'node:fs/promises';
import { writeFileAtomic } from '../config/store.ts';
import type { ConfigDocument, ConfigIssue } from '../config/types.ts';
import { SENSITIVE } from '../reconciler/render.ts';
import type { FieldChange, Plan, ResourceChange } from '../reconciler/types.ts';

export const PLAN_FILE_FORMAT = 'sluice-plan-file/1';

/** A plan file holds the desired document with its secrets in clear (applying exactly what was
 *  shown needs them), so it is readable by its owner only, like a config written by the API. */
export const PLAN_FILE_MODE = 0o600;

export interface PlanFile {
  format: typeof PLAN_FILE_FORMAT;
  /** When the plan was made (ISO 8601). */
  createdAt: string;
  /** The server the plan was made against and is applied through. */
  server: string;
  /** Where the desired config was read (`new.json`, `URL@commit:path`). */
  from: string;
  /** ETag of the running config the plan was made against. */
  etag: string;
  /** The plan as shown (`sluice-plan/1`, secrets masked). */
  plan: Record<string, unknown>;
  /** The desired document as read from `from`, secrets in clear. */
  config: ConfigDocument;
}

export async function writePlanFile(path: string, file: PlanFile): Promise<void> {
  await writeFileAtomic(path, `${JSON.stringify(file, null, 2)}\n`, { mode: PLAN_FILE_MODE });
}

const isObject = (v: unknown): v is Record<string, unknown> =>
  typeof v === 'object' && v !== null && !Array.isArray(v);

export async function readPlanFile(path: string): Promise<PlanFile> {
  const text = await readFile(path, 'utf8');
  let v: unknown;
  try {
    v = JSON.parse(text);
  } catch (err) {
    throw new Error(`${path} is not a plan file: ${(err as Error).message}`);
  }
  if (!isObject(v) || v['format'] !== PLAN_FILE_FORMAT) {
    throw new Error(
      `${path} is not a plan file (no "format": "${PLAN_FILE_FORMAT}"); make one with sluice reconcile --plan --out ${path}`,
    );
  }
  for (const [key, ok] of [
    ['server', typeof v['server'] === 'string'],
    ['etag', typeof v['etag'] === 'string'],
    ['plan', isObject(v['plan'])],
    ['config', isObject(v['config'])],
  ] as const) {
    if (!ok) throw new Error(`${path}: the plan file has no valid "${key}"`);
  }
  return v as unknown as PlanFile;
}

/** The part of a `sluice-plan/1` plan that says what will be done (not the warnings or the
 *  unchanged count), as one comparable string. */
export function planActions(plan: Record<string, unknown>): string {
  const s = (plan['summary'] ?? {}) as Record<string, unknown>;
  const summary = {
    add: s['add'],
    change: s['change'],
    replace: s['replace'],
    destroy: s['destroy'],
  };
  return JSON.stringify({ summary, changes: plan['changes'] ?? [] });
}

/** Rebuild a Plan from the server's `sluice-plan/1` JSON (secrets arrive masked already). */
export function planFromJson(body: Record<string, unknown>): Plan {
  const summary = body['summary'] as Plan['summary'] | undefined;
  const changes = (body['changes'] as Array<Record<string, unknown>> | undefined) ?? [];
  if (!summary) throw new Error('the server answered something that is not a plan');
  return {
    changes: changes.map(
      (c): ResourceChange => ({
        kind: c['kind'] as ResourceChange['kind'],
        key: String(c['key']),
        name: String(c['name']),
        action: c['action'] as ResourceChange['action'],
        fields: ((c['fields'] as Array<Record<string, unknown>> | undefined) ?? []).map(
          (f): FieldChange => {
            // JSON has no `undefined`: an absent side travels as null (config values are
            // never null, a merge patch null deletes), so null means "not set" again here.
            const out: FieldChange = {
              path: String(f['path']),
              before: f['before'] === null ? undefined : f['before'],
              after: f['after'] === null ? undefined : f['after'],
              apply: f['apply'] as FieldChange['apply'],
            };
            if (typeof f['scope'] === 'string') out.scope = f['scope'];
            // A value masked whole is shown as the bare marker, like a plan rendered locally
            // (a record with secrets inside keeps its masked copy).
            const masked = (v: unknown) => v === null || v === SENSITIVE;
            if (f['sensitive'] === true && masked(f['before']) && masked(f['after']))
              out.secret = true;
            return out;
          },
        ),
        forcesReplace: (c['forcesReplace'] as string[] | undefined) ?? [],
        unchanged: Number(c['unchanged'] ?? 0),
      }),
    ),
    errors: (body['errors'] as ConfigIssue[] | undefined) ?? [],
    warnings: (body['warnings'] as ConfigIssue[] | undefined) ?? [],
    summary: {
      add: summary.add,
      change: summary.change,
      replace: summary.replace,
      destroy: summary.destroy,
    },
  };
}
