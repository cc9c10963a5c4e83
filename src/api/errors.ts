// The admin API's one error handler and 404 handler: every failure leaves as JSON
// `{status, message}` with its HTTP code (spec 2), config errors with every issue listed.
import type { FastifyError, FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { ConfigError, type ConfigIssue } from '../config/types.ts';
import { ERRORS, HttpError } from '../errors.ts';

/** One entry of `errors` in a 400 answer. */
export interface IssueBody {
  pointer: string;
  line?: number;
  column?: number;
  rule: string;
  message: string;
  value?: unknown;
}

export interface ErrorBody {
  status: number;
  message: string;
  errors?: IssueBody[];
  warnings?: IssueBody[];
}

/** JSON schema of the error body, shared by route schemas (OpenAPI). */
export const ERROR_SCHEMA = {
  $id: 'ApiError',
  type: 'object',
  required: ['status', 'message'],
  properties: {
    status: { type: 'integer' },
    message: { type: 'string' },
    errors: { type: 'array', items: { $ref: 'ConfigIssue#' } },
    warnings: { type: 'array', items: { $ref: 'ConfigIssue#' } },
  },
} as const;

export const ISSUE_SCHEMA = {
  $id: 'ConfigIssue',
  type: 'object',
  required: ['pointer', 'rule', 'message'],
  properties: {
    pointer: { type: 'string', description: 'JSON pointer into the document' },
    line: { type: 'integer' },
    column: { type: 'integer' },
    rule: { type: 'string' },
    message: { type: 'string' },
    value: {},
  },
} as const;

export function issueBody(i: ConfigIssue): IssueBody {
  const out: IssueBody = { pointer: i.pointer, rule: i.rule, message: i.message };
  if (i.line !== undefined) out.line = i.line;
  if (i.column !== undefined) out.column = i.column;
  if (i.value !== undefined) out.value = i.value;
  return out;
}

/** The body and status for any thrown value. `logged` says whether it was unexpected. */
export function errorBody(err: unknown): { body: ErrorBody; unexpected: boolean } {
  if (err instanceof ConfigError) {
    const errors = err.issues.filter((i) => i.severity === 'error').map(issueBody);
    const warnings = err.issues.filter((i) => i.severity === 'warning').map(issueBody);
    const body: ErrorBody = { status: 400, message: err.message, errors };
    if (warnings.length) body.warnings = warnings;
    return { body, unexpected: false };
  }
  if (err instanceof HttpError) {
    return { body: { status: err.status, message: err.message }, unexpected: false };
  }
  const fe = err as Partial<FastifyError> | undefined;
  if (fe?.validation) {
    // Request schema failures: same shape as config errors, pointer into the request part.
    const where = fe.validationContext ?? 'body';
    const errors = fe.validation.map((v) => ({
      pointer: `${where === 'body' ? '' : `/${where}`}${v.instancePath}`,
      rule: v.keyword,
      message: `${where}${v.instancePath} ${v.message ?? 'is invalid'}`,
    }));
    return { body: { status: 400, message: 'The request is invalid', errors }, unexpected: false };
  }
  if (fe?.code === 'FST_ERR_CTP_BODY_TOO_LARGE') {
    return {
      body: { status: 413, message: `the request body is larger than the ${limitText()} limit` },
      unexpected: false,
    };
  }
  const status = fe?.statusCode;
  if (typeof status === 'number' && status >= 400 && status < 500) {
    return { body: { status, message: fe?.message ?? 'Bad Request' }, unexpected: false };
  }
  return {
    body: { status: ERRORS.INTERNAL.status, message: ERRORS.INTERNAL.message },
    unexpected: true,
  };
}

/** Whole config documents arrive in one body; 10,000 streams are a few MB. */
export const BODY_LIMIT_BYTES = 64 * 1024 * 1024;
const MIB = 1024 * 1024;

function limitText(): string {
  return `${BODY_LIMIT_BYTES / MIB} MB`;
}

/**
 * Errors Fastify meets before a route runs (a URL it cannot decode, a parameter too long):
 * answered in the house `{status, message}` shape instead of Fastify's own body.
 */
export function frameworkError(err: FastifyError, req: FastifyRequest, reply: FastifyReply): void {
  const status = typeof err.statusCode === 'number' ? err.statusCode : 400;
  const path = req.raw.url?.split('?')[0] ?? '';
  const message =
    err.code === 'FST_ERR_BAD_URL'
      ? `the URL path ${path} cannot be decoded: a %-escape in it is not UTF-8`
      : err.message;
  void sendError(reply, status, message);
}

export function sendError(reply: FastifyReply, status: number, message: string): FastifyReply {
  return reply
    .code(status)
    .type('application/json; charset=utf-8')
    .send(JSON.stringify({ status, message }));
}

/** Install the error and not-found handlers on the root instance. */
export function installErrorHandlers(app: FastifyInstance): void {
  app.setErrorHandler((err: unknown, req: FastifyRequest, reply: FastifyReply) => {
    const { body, unexpected } = errorBody(err);
    if (unexpected) req.log.error({ err }, 'request failed');
    if (err instanceof HttpError && err.status === 405 && err.details) {
      reply.header('allow', String(err.details));
    }
    // Serialised here so a route's response schema never reshapes an error.
    return reply
      .code(body.status)
      .type('application/json; charset=utf-8')
      .send(JSON.stringify(body));
  });
  // Fixed paths and the methods they take: a known path asked with another method is 405 with
  // `Allow`, not 404. (Parametric routes answer their own 405s, e.g. /config/{kind}/{id}.)
  const fixed = new Map<string, Set<string>>();
  app.addHook('onRoute', (route) => {
    if (/[:*]/.test(route.url)) return;
    const methods = fixed.get(route.url) ?? new Set<string>();
    for (const m of [route.method].flat()) methods.add(m);
    fixed.set(route.url, methods);
  });
  app.setNotFoundHandler((req, reply) => {
    const path = req.url.split('?')[0]!;
    const methods = fixed.get(path);
    if (methods && !methods.has(req.method)) {
      const allow = [...methods].join(', ');
      reply.header('allow', allow);
      return sendError(reply, 405, `${req.method} is not allowed on ${path}; it takes ${allow}`);
    }
    return sendError(reply, ERRORS.NOT_FOUND.status, ERRORS.NOT_FOUND.message);
  });
}
