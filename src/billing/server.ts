// One billing server (`cs.server[]`): which logins it sees, and one request to it — an
// authorisation or an accounting notification — built from its templates and bounded in time
// and size, so a slow, trickling, garbled or looping server costs a player at most `timeout`.
import type { Logger } from 'pino';
import { OutboundRequestError, requestWithDeadline } from '../util/outbound-request.ts';
import { builtinQuery, fillBody, fillTemplate, type TemplateValues } from './template.ts';
import { type Judgement, judgeReply, type ReplyRules } from './verdict.ts';

export interface BillingServer {
  id: number;
  name: string;
  /** The shared secret, the `{secret}` placeholder. */
  secret: string;
  url: string;
  timeoutMs: number;
  accounting: boolean;
  loginPrefix: string;
  loginSuffix: string;
  trace: boolean;
  order: number;
  /** `connector` empty or universal; anything else disables the server. */
  enabled: boolean;
  requestQuery: string;
  requestBody: string;
  requestContentType: string;
  requestHeaders: [string, string][];
  reply: ReplyRules;
}

/** A reply body is read up to this size; a larger one is no verdict. */
export const REPLY_LIMIT_BYTES = 64 * 1024;

/** The servers that see `login`, in query order (`order`, then `id`). */
export function serversFor(all: Iterable<BillingServer>, login: string): BillingServer[] {
  return [...all]
    .filter((s) => s.enabled && login.startsWith(s.loginPrefix) && login.endsWith(s.loginSuffix))
    .sort((a, b) => a.order - b.order || a.id - b.id);
}

/** What a server is sent: method, headers and body of the request to `url`. */
export interface BillingRequest {
  method: 'GET' | 'POST';
  headers: [string, string][];
  body?: string;
}

/** The request line and body a server gets for `values`. */
export function buildRequest(
  server: BillingServer,
  values: TemplateValues,
): { url: string; init: BillingRequest } {
  const all: TemplateValues = { ...values, secret: server.secret };
  const query = server.requestQuery
    ? fillTemplate(server.requestQuery, all, 'query')
    : builtinQuery(all);
  const url = query ? `${server.url}${server.url.includes('?') ? '&' : '?'}${query}` : server.url;
  const headers: [string, string][] = server.requestHeaders.map(([n, v]) => [
    n,
    fillTemplate(v, all, 'none'),
  ]);
  if (!server.requestBody) return { url, init: { method: 'GET', headers } };
  const { body, contentType } = fillBody(server.requestBody, all, server.requestContentType);
  if (!headers.some(([n]) => n.toLowerCase() === 'content-type'))
    headers.push(['Content-Type', contentType]);
  return { url, init: { method: 'POST', headers, body } };
}

export interface Asked {
  judgement: Judgement;
  status?: number;
  ms: number;
}

/** Ask `server` once, through the outbound request (its deadline cannot be lost): the judged
 *  reply, or why there is none. Never throws. */
export async function askServer(
  server: BillingServer,
  values: TemplateValues,
  log: Logger,
): Promise<Asked> {
  const started = performance.now();
  const { url, init } = buildRequest(server, values);
  const done = (judgement: Judgement, status?: number): Asked => {
    const ms = Math.round(performance.now() - started);
    if (server.trace)
      log.info(
        { server: server.name, event: values.event, status, ms, judgement },
        'billing request traced',
      );
    return { judgement, ms, ...(status === undefined ? {} : { status }) };
  };
  try {
    // One deadline bounds the whole exchange: connect, TLS, redirects, headers and body.
    const answer = await requestWithDeadline(url, {
      ...init,
      deadlineMs: server.timeoutMs,
      maxBodyBytes: REPLY_LIMIT_BYTES,
    });
    return done(
      judgeReply(server.reply, answer.status, answer.body.toString('utf8')),
      answer.status,
    );
  } catch (e) {
    if (e instanceof OutboundRequestError && e.kind === 'too-large')
      return done({ verdict: false, why: `reply over ${REPLY_LIMIT_BYTES} bytes` }, e.status);
    return done({ verdict: false, why: (e as Error).message });
  }
}
