// `sluice reconcile --plan`: load the desired config (file or git head), then ask the running
// server for the plan of it (POST /config/plan, a dry run), or, when no server answers at the
// default address, diff it against the last applied state kept in the data dir.
import path from 'node:path';
import { parseArgs } from 'node:util';
import type { LoadedConfig } from '../config/contracts.ts';
import { DEFAULT_GIT_BRANCH, DEFAULT_GIT_PATH, readGitConfigOnce } from '../config/git.ts';
import { fieldRules, loadConfigText, placeIssues } from '../config/store.ts';
import { ConfigError, type ConfigIssue } from '../config/types.ts';
import { plan as planDiff } from '../reconciler/plan.ts';
import { renderPlanJson, renderPlanText, SENSITIVE } from '../reconciler/render.ts';
import { loadStateFile, readStateFileInfo, STATE_FILE_NAME } from '../reconciler/state-file.ts';
import type { FieldChange, Plan, ResourceChange } from '../reconciler/types.ts';
import { DEFAULT_DATA_DIR, DEFAULT_SERVER_URL } from './help.ts';
import { formatIssues } from './issues.ts';
import { loadFileForCli } from './validate.ts';

/** How long to wait for the server's answer before giving up. */
const SERVER_TIMEOUT_MS = 15_000;

export async function reconcileCommand(argv: string[]): Promise<number> {
  const { values, positionals } = parseArgs({
    args: argv,
    options: {
      plan: { type: 'boolean' },
      config: { type: 'string' },
      git: { type: 'string' },
      branch: { type: 'string' },
      path: { type: 'string' },
      server: { type: 'string' },
      json: { type: 'boolean' },
      'data-dir': { type: 'string' },
    },
    allowPositionals: true,
    strict: true,
  });
  if (!values.plan) throw new Error('only `reconcile --plan` exists: add --plan');
  if (positionals.length > 0) throw new Error(`unexpected argument: ${positionals[0]}`);
  if (values.config && values.git) throw new Error('give --config or --git, not both');
  if (!values.config && !values.git)
    throw new Error('give the desired config: --config FILE or --git URL');

  const got = values.config
    ? { loaded: await loadFileForCli(values.config), label: values.config }
    : await loadGitForCli(
        values.git!,
        values.branch ?? DEFAULT_GIT_BRANCH,
        values.path ?? DEFAULT_GIT_PATH,
      );
  const { loaded, label } = got;
  if (!loaded) return 1;
  // Problems found by the plan (a `fixed` field changed) point into the file given, by the
  // same pointer; the server's own line numbers are those of its copy, so place them here.
  const place = (issues: ConfigIssue[]) =>
    placeIssues(
      loaded.text,
      issues.map(({ line: _l, column: _c, ...i }) => i),
    );

  const explicitServer = values.server !== undefined;
  const server = values.server ?? process.env['SLUICE_SERVER'] ?? DEFAULT_SERVER_URL;
  let result: Plan;
  try {
    result = await planOnServer(server, loaded.doc);
  } catch (err) {
    if (err instanceof ConfigError) {
      const n = err.issues.length;
      process.stderr.write(
        `${formatIssues(label, place(err.issues))}\n` +
          `${server} refused the plan: ${n} error${n === 1 ? '' : 's'}; nothing would be applied\n`,
      );
      return 1;
    }
    if (explicitServer || !(err instanceof ServerUnreachable)) throw err;
    const dataDir = values['data-dir'] ?? DEFAULT_DATA_DIR;
    const stateFile = path.join(dataDir, STATE_FILE_NAME);
    const info = readStateFileInfo(stateFile);
    process.stderr.write(
      info
        ? `no server at ${server}; comparing with ${stateFile} (applied ${info.appliedAt} from ${info.origin})\n`
        : `no server at ${server} and nothing applied in ${dataDir}: comparing with an empty server\n`,
    );
    const actual = loadStateFile(stateFile);
    result = planDiff(loaded.desired, actual, fieldRules, { warnings: loaded.warnings });
  }
  process.stdout.write(values.json ? renderPlanJson(result) : renderPlanText(result));
  if (result.errors.length > 0) {
    process.stderr.write(`${formatIssues(label, place(result.errors))}\n`);
    return 1;
  }
  const s = result.summary;
  return s.add + s.change + s.replace + s.destroy > 0 ? 2 : 0;
}

async function loadGitForCli(
  url: string,
  branch: string,
  repoPath: string,
): Promise<{ loaded: LoadedConfig | undefined; label: string }> {
  const { text, commit } = await readGitConfigOnce(url, branch, repoPath);
  const label = `${url}@${commit.slice(0, 12)}:${repoPath}`;
  try {
    const loaded = loadConfigText(text, { source: label });
    if (loaded.warnings.length > 0)
      process.stderr.write(`${formatIssues(label, loaded.warnings)}\n`);
    return { loaded, label };
  } catch (err) {
    if (!(err instanceof ConfigError)) throw err;
    process.stderr.write(`${formatIssues(label, err.issues)}\n`);
    process.stderr.write(`commit ${commit} of ${url} (${branch}) is invalid\n`);
    return { loaded: undefined, label };
  }
}

class ServerUnreachable extends Error {}

/** POST the document to the server's dry-run endpoint and read back its plan. */
async function planOnServer(server: string, doc: unknown): Promise<Plan> {
  const url = new URL('/config/plan', server);
  let res: Response;
  try {
    res = await fetch(url, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify(doc),
      signal: AbortSignal.timeout(SERVER_TIMEOUT_MS),
    });
  } catch (err) {
    throw new ServerUnreachable(`cannot reach ${server}: ${(err as Error).message}`);
  }
  const body = (await res.json().catch(() => ({}))) as Record<string, unknown>;
  if (res.status === 400 && Array.isArray(body['errors'])) {
    const issues = (body['errors'] as ConfigIssue[]).map((i) => ({
      ...i,
      severity: 'error' as const,
    }));
    throw new ConfigError(String(body['message'] ?? 'the configuration is invalid'), issues);
  }
  if (!res.ok) {
    throw new Error(
      `${server} answered ${res.status}: ${String(body['message'] ?? res.statusText)}`,
    );
  }
  const planJson = body['plan'] as Record<string, unknown> | undefined;
  if (!planJson) throw new Error(`${server} answered without a plan`);
  return planFromJson(planJson);
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
