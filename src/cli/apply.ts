// `sluice reconcile --apply PLANFILE`: apply exactly the plan saved by `--plan --out`, through
// the admin API (PUT /config with If-Match: the ETag the plan was made against). The server
// is asked for the plan of the same document first (a dry run): when the running config or
// what that document would do has changed since, nothing is applied.
import { parseArgs } from 'node:util';
import { renderPlanText } from '../reconciler/render.ts';
import { planActions, planFromJson, readPlanFile } from './plan-file.ts';
import { callAdminApi } from './server-request.ts';

/** The apply was refused: the running config, or the plan of the saved config, moved on. */
class StalePlan extends Error {}

interface PutAnswer {
  status: number;
  body: Record<string, unknown>;
}

async function putConfig(
  server: string,
  doc: unknown,
  etag: string,
  dryRun: boolean,
): Promise<PutAnswer> {
  const path = `/config${dryRun ? '?dry-run=true' : ''}`;
  const { status, body } = await callAdminApi(server, path, {
    method: 'PUT',
    headers: { 'if-match': etag },
    doc,
  });
  return { status, body };
}

/** The ETag of the server's running config now (for the message of a refusal), if it says. */
async function currentEtag(server: string): Promise<string | undefined> {
  return (await callAdminApi(server, '/config').catch(() => undefined))?.etag;
}

function stale(file: string, from: string, planned: string, now: string | undefined): StalePlan {
  const current = now ? `; the server now has ${now}` : '';
  return new StalePlan(
    `the running config changed since this plan was made (it was made against ${planned}${current}). ` +
      `Nothing was applied: make a new plan of ${from} (sluice reconcile --plan … --out ${file})`,
  );
}

function failure(server: string, a: PutAnswer): Error {
  return new Error(`${server} answered ${a.status}: ${String(a.body['message'] ?? 'no message')}`);
}

export async function applyCommand(argv: string[]): Promise<number> {
  const { values, positionals } = parseArgs({
    args: argv,
    options: { apply: { type: 'string' }, server: { type: 'string' } },
    allowPositionals: true,
    strict: true,
  });
  if (positionals.length > 0) throw new Error(`unexpected argument: ${positionals[0]}`);
  const file = values.apply!;
  const saved = await readPlanFile(file);
  const server = values.server ?? saved.server;
  const from = typeof saved.from === 'string' ? saved.from : 'the desired config';
  const shown = planActions(saved.plan);
  if (saved.plan['changed'] === false) {
    process.stdout.write(`${file}: No changes. Nothing to apply.\n`);
    return 0;
  }

  try {
    // 1. What would the server do with this document now? Same config, same plan, or stop.
    const dry = await putConfig(server, saved.config, saved.etag, true);
    // A server that checks If-Match on a dry run already answers 412 here.
    if (dry.status === 412) throw stale(file, from, saved.etag, await currentEtag(server));
    if (dry.status !== 200) throw failure(server, dry);
    const now = String(dry.body['etag']);
    if (now !== saved.etag) throw stale(file, from, saved.etag, now);
    if (planActions(dry.body['plan'] as Record<string, unknown>) !== shown) {
      throw new StalePlan(
        'the plan of this config is no longer the one saved (the running state changed since it ' +
          `was made). Nothing was applied: make a new plan of ${from} (sluice reconcile --plan … --out ${file})`,
      );
    }
    // 2. Apply it, still only if nobody changed the config in between.
    const done = await putConfig(server, saved.config, saved.etag, false);
    if (done.status === 412) throw stale(file, from, saved.etag, await currentEtag(server));
    if (done.status !== 200) throw failure(server, done);
    const applied = done.body['plan'] as Record<string, unknown>;
    if (planActions(applied) !== shown) {
      process.stderr.write(
        `${file}: warning: the server's plan of the apply differs from the saved one; it did:\n` +
          renderPlanText(planFromJson(applied)),
      );
    }
    const s = saved.plan['summary'] as Record<string, number>;
    const commit = typeof done.body['commit'] === 'string' ? `, commit ${done.body['commit']}` : '';
    process.stdout.write(
      `Applied ${file} through ${server}: ${s['add']} added, ${s['change']} changed, ` +
        `${s['replace']} replaced, ${s['destroy']} destroyed (config ${String(done.body['etag'])}${commit}).\n`,
    );
    return 0;
  } catch (err) {
    if (!(err instanceof StalePlan)) throw err;
    process.stderr.write(`sluice reconcile: refused to apply ${file}: ${err.message}\n`);
    return 1;
  }
}
