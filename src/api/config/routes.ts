// /config routes: read the desired config (whole, per kind, per record) with ETags, and edit
// it through ConfigService.edit; every write answers with the new ETag and the plan.
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { ifMatchAccepts, preconditionFailed } from '../../config/service.ts';
import {
  elideDefaults,
  formatConfigOver,
  loadProposedText,
  placeIssues,
} from '../../config/store.ts';
import { ConfigError } from '../../config/types.ts';
import { HttpError } from '../../errors.ts';
import { planToJson } from '../../reconciler/render.ts';
import type { Plan } from '../../reconciler/types.ts';
import type { AppContext } from '../context.ts';
import {
  createRecord,
  deleteRecord,
  editMessage,
  type Mutation,
  patchDocument,
  patchRecord,
  patchSingleton,
  replaceDocument,
  replaceRecord,
  replaceSingleton,
} from './edits.ts';
import {
  COLLECTIONS,
  type CollectionKind,
  listOf,
  recordId,
  requireRecord,
  resolveKind,
} from './kinds.ts';
import { ERR, KIND_PARAMS, RECORD_PARAMS, WRITE_QUERY, WRITE_RESULT } from './schemas.ts';

type Params = { kind?: string; id?: string };
type Query = { 'dry-run'?: boolean };
type Req = FastifyRequest<{ Params: Params; Querystring: Query; Body: unknown }>;

const SINGLETON_ALLOW = 'GET, HEAD, PUT, PATCH';
const COLLECTION_ALLOW = 'GET, HEAD, POST';
const ANY_JSON = { description: 'JSON document' };
const OBJECT_BODY = { type: 'object', additionalProperties: true } as const;

/** 405 saying what was asked and what the path takes (also in the Allow header). */
function notAllowed(method: string, url: string, allow: string): HttpError {
  const path = url.split('?')[0];
  return new HttpError(
    'METHOD_NOT_ALLOWED',
    `${method} is not allowed on ${path}; it takes ${allow}`,
    allow,
  );
}

function methodNotAllowed(allowed: string[]) {
  return async (req: FastifyRequest) => {
    throw notAllowed(req.method, req.url, allowed.join(', '));
  };
}

/** The collection named `kind`; a singleton has no records, so `/config/{singleton}/x` is 404. */
function collectionOf(kind: string): CollectionKind {
  const ref = resolveKind(kind);
  if (ref.type !== 'collection') {
    throw new HttpError('NOT_FOUND', `${kind} is a single object, not a list: use /config/${kind}`);
  }
  return ref.def;
}

/** The text `doc` would be written as: the current file edited in place (its layout kept), so
 *  the line:column of a problem point into the operator's own file. */
function proposedText(ctx: AppContext, doc: Record<string, unknown>): string {
  return formatConfigOver(ctx.config.current().text, elideDefaults(doc));
}

/** Validate `doc` as the file it would be written as (throws ConfigError), then plan it. */
function defaultPlan(ctx: AppContext, doc: Record<string, unknown>): Plan {
  const loaded = loadProposedText(proposedText(ctx, doc));
  const plan = ctx.loop.plan(loaded.desired);
  return { ...plan, warnings: [...loaded.warnings, ...plan.warnings] };
}

export async function configRoutes(app: FastifyInstance, opts: { ctx: AppContext }): Promise<void> {
  const { ctx } = opts;

  /** Send a read with the document's ETag; 304 when the client already has it. */
  const read = (req: FastifyRequest, reply: FastifyReply, etag: string, value: unknown) => {
    reply.header('etag', etag);
    const inm = req.headers['if-none-match'];
    if (inm?.split(',').some((t) => t.trim() === etag || t.trim() === '*')) {
      return reply.code(304).send();
    }
    return value;
  };

  /** Apply a mutation (or plan it only, with `?dry-run=true`). */
  const write = async (req: Req, reply: FastifyReply, mutate: Mutation, message: string) => {
    const ifMatch = req.headers['if-match'];
    if (req.query['dry-run']) {
      const cur = ctx.config.current();
      // A dry run answers what the write would: a stale or weak If-Match is 412 here too.
      if (ifMatch !== undefined && !ifMatchAccepts(ifMatch, cur.etag)) {
        throw preconditionFailed(ifMatch, cur.etag);
      }
      const plan = await planOf(mutate(cur.doc));
      reply.header('etag', cur.etag);
      return { etag: cur.etag, plan: planToJson(plan), dryRun: true };
    }
    const result = await ctx.config.edit(mutate, {
      message,
      ...(ifMatch !== undefined ? { ifMatch } : {}),
    });
    reply.header('etag', result.etag);
    const body: Record<string, unknown> = { etag: result.etag, plan: planToJson(result.plan) };
    if (result.commit) body['commit'] = result.commit;
    return body;
  };

  /** The plan of a whole document; main may inject `planFor`, else load it and ask the loop. */
  const planOf = async (doc: Record<string, unknown>) => {
    const plan = ctx.planFor ? await ctx.planFor(doc) : defaultPlan(ctx, doc);
    if (plan.errors.length > 0) {
      // Placed in the document as it would be written, like every other config error.
      throw new ConfigError(
        `the change cannot be applied: ${plan.errors.map((e) => e.message).join('; ')}`,
        placeIssues(proposedText(ctx, doc), plan.errors),
      );
    }
    return plan;
  };

  const tags = ['config'];
  const writeSchema = (summary: string, params?: object, body?: object) => ({
    tags,
    summary,
    ...(params ? { params } : {}),
    querystring: WRITE_QUERY,
    ...(body ? { body } : {}),
    response: { 200: WRITE_RESULT, 201: WRITE_RESULT, ...ERR },
  });

  // Whole document.
  app.get('/config', {
    schema: {
      tags,
      summary: 'The whole config document (minimal form)',
      response: { 200: OBJECT_BODY },
    },
    handler: (req, reply) => {
      const cur = ctx.config.current();
      return read(req, reply, cur.etag, cur.doc);
    },
  });
  app.put<{ Querystring: Query }>('/config', {
    schema: writeSchema('Replace the whole config document', undefined, OBJECT_BODY),
    handler: (req, reply) =>
      write(req as Req, reply, replaceDocument(req.body), editMessage('replace', 'config')),
  });
  app.patch<{ Querystring: Query }>('/config', {
    schema: writeSchema(
      'JSON merge patch (RFC 7396) of the whole document',
      undefined,
      OBJECT_BODY,
    ),
    handler: (req, reply) =>
      write(req as Req, reply, patchDocument(req.body), editMessage('patch', 'config')),
  });
  app.route({
    method: ['POST', 'DELETE'],
    url: '/config',
    schema: { hide: true },
    handler: methodNotAllowed(['GET', 'HEAD', 'PUT', 'PATCH']),
  });

  // Dry run of a whole document: what the reconciler would do, nothing written.
  app.post('/config/plan', {
    schema: {
      tags,
      summary: 'Plan a whole config document against the running state (nothing is written)',
      body: OBJECT_BODY,
      response: { 200: WRITE_RESULT, ...ERR },
    },
    handler: async (req) => {
      if (typeof req.body !== 'object' || req.body === null || Array.isArray(req.body)) {
        throw new HttpError('BAD_REQUEST', 'The config document must be a JSON object');
      }
      const plan = await planOf(req.body as Record<string, unknown>);
      return { etag: ctx.config.current().etag, plan: planToJson(plan), dryRun: true };
    },
  });

  // One kind: a collection (list of records) or a singleton object.
  app.get<{ Params: Params }>('/config/:kind', {
    schema: {
      tags,
      summary: 'A collection (array of records) or a singleton object',
      params: KIND_PARAMS,
      response: { 200: ANY_JSON, ...ERR },
    },
    handler: (req, reply) => {
      const ref = resolveKind(req.params.kind!);
      const cur = ctx.config.current();
      const value =
        ref.type === 'collection' ? listOf(cur.doc, ref.def) : (cur.doc[ref.kind] ?? {});
      return read(req, reply, cur.etag, value);
    },
  });
  app.post<{ Params: Params; Querystring: Query }>('/config/:kind', {
    schema: writeSchema('Create a record in a collection', KIND_PARAMS, OBJECT_BODY),
    handler: async (req, reply) => {
      const ref = resolveKind(req.params.kind!);
      if (ref.type !== 'collection') {
        throw notAllowed('POST', req.url, SINGLETON_ALLOW);
      }
      const def = ref.def;
      const mutate = createRecord(def, req.body);
      // createRecord has checked that the body is an object with an identity.
      const id = recordId(def, req.body as Record<string, unknown>)!;
      const out = await write(
        req as Req,
        reply,
        mutate,
        editMessage('create', `${def.kind} ${id}`),
      );
      if (!req.query['dry-run']) {
        reply.code(201).header('location', `/config/${def.kind}/${encodeURIComponent(id)}`);
      }
      return out;
    },
  });
  for (const [method, verb] of [
    ['PUT', 'replace'],
    ['PATCH', 'patch'],
  ] as const) {
    app.route<{ Params: Params; Querystring: Query }>({
      method,
      url: '/config/:kind',
      schema: writeSchema(
        method === 'PUT' ? 'Replace a singleton object' : 'Merge-patch a singleton object',
        KIND_PARAMS,
        OBJECT_BODY,
      ),
      handler: (req, reply) => {
        const ref = resolveKind(req.params.kind!);
        if (ref.type !== 'singleton') {
          throw notAllowed(method, req.url, COLLECTION_ALLOW);
        }
        const mutate =
          method === 'PUT'
            ? replaceSingleton(ref.kind, req.body)
            : patchSingleton(ref.kind, req.body);
        return write(req as Req, reply, mutate, editMessage(verb, ref.kind));
      },
    });
  }
  app.route({
    method: 'DELETE',
    url: '/config/:kind',
    schema: { hide: true },
    // What the path takes depends on the kind: a collection or a singleton.
    handler: async (req: FastifyRequest<{ Params: Params }>) => {
      const ref = resolveKind(req.params.kind!);
      throw notAllowed(
        req.method,
        req.url,
        ref.type === 'collection' ? COLLECTION_ALLOW : SINGLETON_ALLOW,
      );
    },
  });

  // One record.
  app.get<{ Params: Params }>('/config/:kind/:id', {
    schema: {
      tags,
      summary: 'One record of a collection',
      params: RECORD_PARAMS,
      response: { 200: OBJECT_BODY, ...ERR },
    },
    handler: (req, reply) => {
      const def = collectionOf(req.params.kind!);
      const cur = ctx.config.current();
      const list = listOf(cur.doc, def);
      return read(req, reply, cur.etag, list[requireRecord(def, list, req.params.id!)]);
    },
  });
  app.put<{ Params: Params; Querystring: Query }>('/config/:kind/:id', {
    schema: writeSchema('Replace one record', RECORD_PARAMS, OBJECT_BODY),
    handler: (req, reply) => {
      const def = collectionOf(req.params.kind!);
      const { id } = req.params as { id: string };
      const mutate = replaceRecord(def, id, req.body);
      return write(req as Req, reply, mutate, editMessage('replace', `${def.kind} ${id}`));
    },
  });
  app.patch<{ Params: Params; Querystring: Query }>('/config/:kind/:id', {
    schema: writeSchema('JSON merge patch (RFC 7396) of one record', RECORD_PARAMS, OBJECT_BODY),
    handler: (req, reply) => {
      const def = collectionOf(req.params.kind!);
      const { id } = req.params as { id: string };
      const mutate = patchRecord(def, id, req.body);
      return write(req as Req, reply, mutate, editMessage('update', `${def.kind} ${id}`));
    },
  });
  app.delete<{ Params: Params; Querystring: Query }>('/config/:kind/:id', {
    schema: writeSchema('Delete one record', RECORD_PARAMS),
    handler: (req, reply) => {
      const def = collectionOf(req.params.kind!);
      const { id } = req.params as { id: string };
      return write(
        req as Req,
        reply,
        deleteRecord(def, id),
        editMessage('delete', `${def.kind} ${id}`),
      );
    },
  });
  app.route({
    method: 'POST',
    url: '/config/:kind/:id',
    schema: { hide: true },
    handler: methodNotAllowed(['GET', 'HEAD', 'PUT', 'PATCH', 'DELETE']),
  });
}

export const CONFIG_KINDS = [...COLLECTIONS.keys()];
