// POST /config/check: the config editor's check of a whole config text (sent as JSON), nothing
// written. The problems are those `sluice validate` prints for the same text, each with its
// one-line form (src/config/issues.ts); a valid text gets the plan `reconcile --plan` would print.
import type { FastifyInstance } from 'fastify';
import { ROOT_SCHEMA_ID, schemaFiles } from '../../config/schema.ts';
import { formatIssue, loadConfigText, placeIssues } from '../../config/store.ts';
import { ConfigError, type ConfigIssue } from '../../config/types.ts';
import { HttpError } from '../../errors.ts';
import { planToJson, renderPlanText } from '../../reconciler/render.ts';
import { bundleSchema } from '../../web/schema-bundle.ts';
import type { AppContext } from '../context.ts';

/** The order `sluice validate` prints in: errors first, then warnings, each by position. */
function byPrintOrder(a: ConfigIssue, b: ConfigIssue): number {
  const rank = (i: ConfigIssue) => (i.severity === 'error' ? 0 : 1);
  return rank(a) - rank(b) || (a.line ?? 0) - (b.line ?? 0) || (a.column ?? 0) - (b.column ?? 0);
}

/** An issue as the editor marks it: its fields and the line `sluice validate` prints (without
 *  the file name). */
function issueOut(i: ConfigIssue) {
  return {
    severity: i.severity,
    pointer: i.pointer,
    ...(i.line !== undefined ? { line: i.line, column: i.column ?? 1 } : {}),
    rule: i.rule,
    message: i.message,
    text: formatIssue(i),
  };
}

export async function configCheckRoute(
  app: FastifyInstance,
  opts: { ctx: AppContext },
): Promise<void> {
  const { ctx } = opts;
  let bundled: object | undefined;
  app.get('/config/schema', {
    schema: {
      tags: ['config'],
      summary: 'The config schema as one document (every schema file under $defs), for editors',
      response: { 200: { type: 'object', additionalProperties: true } },
    },
    handler: (_req, reply) => {
      bundled ??= bundleSchema(schemaFiles(), ROOT_SCHEMA_ID);
      return reply.header('cache-control', 'no-cache').send(bundled);
    },
  });
  app.get('/config/text', {
    schema: {
      tags: ['config'],
      summary:
        "The config file's own text (its layout, as on disk) with the same ETag as GET /config, for the editor",
      produces: ['text/plain'],
    },
    handler: (req, reply) => {
      const cur = ctx.config.current();
      reply.header('etag', cur.etag).header('cache-control', 'no-cache');
      if (req.headers['if-none-match']?.split(',').some((t) => t.trim() === cur.etag)) {
        return reply.code(304).send();
      }
      return reply.type('text/plain; charset=utf-8').send(cur.text);
    },
  });
  app.post('/config/check', {
    schema: {
      tags: ['config'],
      summary:
        'Check a whole config text (JSON {"text": "..."}) as `sluice validate` does, and plan it when valid; nothing is written',
      response: { 200: { type: 'object', additionalProperties: true } },
    },
    handler: async (req) => {
      // The text inside JSON: a text/plain body is what any page can send (../csrf.ts).
      const text = (req.body as { text?: unknown } | undefined)?.text;
      if (typeof text !== 'string') {
        throw new HttpError('BAD_REQUEST', 'send the config text as JSON: {"text": "..."}');
      }
      const etag = ctx.config.current().etag;
      let loaded: ReturnType<typeof loadConfigText>;
      try {
        loaded = loadConfigText(text);
      } catch (err) {
        if (!(err instanceof ConfigError)) throw err;
        return { valid: false, etag, issues: [...err.issues].sort(byPrintOrder).map(issueOut) };
      }
      const plan = ctx.planFor ? await ctx.planFor(loaded.doc) : ctx.loop.plan(loaded.desired);
      const issues = [...loaded.warnings, ...placeIssues(text, plan.errors)]
        .sort(byPrintOrder)
        .map(issueOut);
      return {
        valid: plan.errors.length === 0,
        etag,
        issues,
        plan: { text: renderPlanText(plan), ...planToJson(plan) },
      };
    },
  });
}
