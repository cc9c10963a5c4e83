// The CLI's requests to a running server's admin API, through the outbound request: one
// deadline over each whole exchange, so a server that accepts and never answers, or trickles
// its answer, costs a `sluice reconcile` at most SERVER_TIMEOUT_MS per request.
import { requestWithDeadline } from '../util/outbound-request.ts';

/** How long to wait for each answer of the server (connection, request, the whole answer). */
export const SERVER_TIMEOUT_MS = 15_000;
/** An answer is a plan or a status as JSON: far below this; more is no answer. */
const ANSWER_LIMIT_BYTES = 64 * 1024 * 1024;

/** No answer: the server could not be reached, or did not answer within SERVER_TIMEOUT_MS. */
export class ServerUnreachable extends Error {}

export interface ServerAnswer {
  status: number;
  statusText: string;
  etag: string | undefined;
  /** The JSON object answered; `{}` when the body is not one. */
  body: Record<string, unknown>;
}

/** `method` `path` on `server` with an optional JSON document. */
export async function callAdminApi(
  server: string,
  path: string,
  o: { method?: string; headers?: Record<string, string>; doc?: unknown } = {},
): Promise<ServerAnswer> {
  const headers = { ...o.headers };
  if (o.doc !== undefined) headers['content-type'] = 'application/json';
  try {
    const answer = await requestWithDeadline(new URL(path, server).href, {
      method: o.method ?? 'GET',
      headers,
      ...(o.doc === undefined ? {} : { body: JSON.stringify(o.doc) }),
      deadlineMs: SERVER_TIMEOUT_MS,
      maxBodyBytes: ANSWER_LIMIT_BYTES,
    });
    const etag = answer.headers.etag;
    return {
      status: answer.status,
      statusText: answer.statusText,
      etag: typeof etag === 'string' ? etag : undefined,
      body: jsonObject(answer.body),
    };
  } catch (err) {
    throw new ServerUnreachable(`cannot reach ${server}: ${(err as Error).message}`);
  }
}

function jsonObject(body: Buffer): Record<string, unknown> {
  try {
    const v: unknown = JSON.parse(body.toString('utf8'));
    return v !== null && typeof v === 'object' ? (v as Record<string, unknown>) : {};
  } catch {
    return {};
  }
}
