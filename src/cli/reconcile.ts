// `sluice reconcile --plan`: load the desired config (file or git head), then ask the running
// server for the plan of it (POST /config/plan, a dry run), or, when no server answers at the
// default address, diff it against the last applied state kept in the data dir. With `--out`
// the plan is saved for `reconcile --apply` (src/cli/apply.ts).
import path from 'node:path';
import { parseArgs } from 'node:util';
import type { LoadedConfig } from '../config/contracts.ts';
import { DEFAULT_GIT_BRANCH, DEFAULT_GIT_PATH, readGitConfigOnce } from '../config/git.ts';
import { nodeName, shareOf } from '../config/placement.ts';
import { fieldRules, loadConfigText, placeIssues } from '../config/store.ts';
import { ConfigError, type ConfigIssue } from '../config/types.ts';
import { plan as planDiff } from '../reconciler/plan.ts';
import { renderPlanJson, renderPlanText } from '../reconciler/render.ts';
import { loadStateFile, readStateFileInfo, STATE_FILE_NAME } from '../reconciler/state-file.ts';
import type { Plan } from '../reconciler/types.ts';
import { applyCommand } from './apply.ts';
import { DEFAULT_DATA_DIR, DEFAULT_SERVER_URL } from './help.ts';
import { formatIssues } from './issues.ts';
import { PLAN_FILE_FORMAT, planFromJson, writePlanFile } from './plan-file.ts';
import { callAdminApi, ServerUnreachable } from './server-request.ts';
import { loadFileForCli } from './validate.ts';

export async function reconcileCommand(argv: string[]): Promise<number> {
  if (argv.some((a) => a === '--apply' || a.startsWith('--apply='))) {
    if (argv.includes('--plan')) throw new Error('give --plan or --apply, not both');
    return applyCommand(argv);
  }
  const { values, positionals } = parseArgs({
    args: argv,
    options: {
      plan: { type: 'boolean' },
      out: { type: 'string' },
      config: { type: 'string' },
      git: { type: 'string' },
      branch: { type: 'string' },
      path: { type: 'string' },
      server: { type: 'string' },
      json: { type: 'boolean' },
      'data-dir': { type: 'string' },
      node: { type: 'string' },
    },
    allowPositionals: true,
    strict: true,
  });
  if (!values.plan) throw new Error('give --plan (to see a plan) or --apply PLANFILE');
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
  let answer: ServerPlan | undefined;
  try {
    // A server plans its own share of a fleet's config: --node must name that server's node.
    if (values.node !== undefined) await checkServerNode(server, values.node);
    answer = await planOnServer(server, loaded.doc);
    result = answer.plan;
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
    if (values.out) {
      throw new Error(
        `--out needs a running server (a saved plan is applied through its API): ${err.message}`,
      );
    }
    const dataDir = values['data-dir'] ?? DEFAULT_DATA_DIR;
    const stateFile = path.join(dataDir, STATE_FILE_NAME);
    const info = readStateFileInfo(stateFile);
    process.stderr.write(
      info
        ? `no server at ${server}; comparing with ${stateFile} (applied ${info.appliedAt} from ${info.origin})\n`
        : `no server at ${server} and nothing applied in ${dataDir}: comparing with an empty server\n`,
    );
    const actual = loadStateFile(stateFile);
    // Offline, the share is --node's (default: this host's node, as `serve` would run it).
    const p = loaded.desired.placement;
    const desired =
      p && p.nodes.length > 0
        ? shareOf(loaded.desired, p, nodeName(loaded.desired, values.node))
        : loaded.desired;
    result = planDiff(desired, actual, fieldRules, { warnings: loaded.warnings });
  }
  process.stdout.write(values.json ? renderPlanJson(result) : renderPlanText(result));
  if (result.errors.length > 0) {
    process.stderr.write(`${formatIssues(label, place(result.errors))}\n`);
    return 1;
  }
  if (values.out && answer) {
    await writePlanFile(values.out, {
      format: PLAN_FILE_FORMAT,
      createdAt: new Date().toISOString(),
      server,
      from: label,
      etag: answer.etag,
      plan: answer.json,
      config: loaded.doc,
    });
    process.stderr.write(
      `plan saved to ${values.out} (owner-only: it holds the config's secrets); ` +
        `apply exactly this plan with: sluice reconcile --apply ${values.out}\n`,
    );
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

/** Refuse a plan for one node against the server of another. */
async function checkServerNode(server: string, node: string): Promise<void> {
  const st = (await callAdminApi(server, '/data/status')).body as { node?: { name?: string } };
  const name = st.node?.name;
  if (name !== undefined && name !== node)
    throw new Error(
      `${server} is node ${name}, not ${node}: give that node's server with --server, or leave --node out`,
    );
}

/** The server's plan of a document, as JSON and rebuilt, with the ETag of its running config. */
interface ServerPlan {
  plan: Plan;
  json: Record<string, unknown>;
  etag: string;
}

/** POST the document to the server's dry-run endpoint and read back its plan. */
async function planOnServer(server: string, doc: unknown): Promise<ServerPlan> {
  const res = await callAdminApi(server, '/config/plan', { method: 'POST', doc });
  const body = res.body;
  if (res.status === 400 && Array.isArray(body['errors'])) {
    const issues = (body['errors'] as ConfigIssue[]).map((i) => ({
      ...i,
      severity: 'error' as const,
    }));
    throw new ConfigError(String(body['message'] ?? 'the configuration is invalid'), issues);
  }
  if (res.status < 200 || res.status > 299) {
    throw new Error(
      `${server} answered ${res.status}: ${String(body['message'] ?? res.statusText)}`,
    );
  }
  const planJson = body['plan'] as Record<string, unknown> | undefined;
  if (!planJson) throw new Error(`${server} answered without a plan`);
  return { plan: planFromJson(planJson), json: planJson, etag: String(body['etag']) };
}
