// The one way sluice asks another server over HTTP(S): a hard deadline over the whole exchange
// (connect, TLS, headers, every byte of the body, redirects included), an optional limit on a
// wait without progress, and on expiry the caller rejected and the connection destroyed.
import http, {
  type ClientRequest,
  type IncomingHttpHeaders,
  type IncomingMessage,
} from 'node:http';
import https from 'node:https';
import { type Clock, systemClock } from './clock.ts';
import { ReadGuard } from './read-guard.ts';

const MS_PER_SECOND = 1000;
/** Redirects followed at most: the Fetch standard's limit, which callers used to get from fetch. */
export const MAX_REDIRECTS = 20;
const REDIRECT_STATUSES = new Set([301, 302, 303, 307, 308]);
/** Headers that must not follow a redirect to another origin (they are credentials). */
const CREDENTIAL_HEADERS = new Set(['authorization', 'cookie', 'proxy-authorization']);
/** Headers that describe a body, dropped when a redirect turns the request into a GET. */
const BODY_HEADERS = new Set(['content-type', 'content-length', 'content-encoding']);

/** Why a request failed: `deadline` (the whole exchange took too long), `idle` (no bytes for the
 *  idle limit), `stopped` (the caller's signal), `too-large` (a buffered body over its cap),
 *  `redirects` (too many, or to a scheme other than http/https), `network` (connect, DNS, TLS,
 *  reset), `url` (not an http/https URL). */
export type OutboundFailure =
  | 'deadline'
  | 'idle'
  | 'stopped'
  | 'too-large'
  | 'redirects'
  | 'network'
  | 'url';

export class OutboundRequestError extends Error {
  constructor(
    readonly kind: OutboundFailure,
    message: string,
    /** The answer's status, when there was one (`too-large`). */
    readonly status?: number,
    /** The system error code of a `network` failure (ECONNREFUSED, ENOTFOUND…). */
    readonly code?: string,
  ) {
    super(message);
    this.name = 'OutboundRequestError';
  }
}

export interface OutboundRequest {
  method?: string;
  headers?: Record<string, string> | [string, string][];
  body?: string | Uint8Array;
  /** The exchange — connect, TLS, headers and the whole body — ends within this (ms) or fails. */
  deadlineMs: number;
  /** Fail when the caller waited this long for the next bytes (headers, or the next piece of
   *  the body). Unset: only the deadline. */
  idleMs?: number;
  /** Redirects followed at most (default MAX_REDIRECTS); 0: a 3xx is the answer. */
  maxRedirects?: number;
  /** The caller's stop: the request fails with `stopped` and its connection is destroyed. */
  signal?: AbortSignal;
  /** Whose timers bound it (tests drive the deadline by hand). */
  clock?: Clock;
}

export interface OutboundAnswerHead {
  /** Where the answer came from (after redirects), without its query. */
  url: string;
  status: number;
  statusText: string;
  headers: IncomingHttpHeaders;
}

export interface OpenAnswer extends OutboundAnswerHead {
  /** The body, read once; each wait bounded by the idle limit, the whole by the deadline. */
  chunks: AsyncIterable<Buffer>;
  /** Done with it: timers cancelled, the connection destroyed unless the body was read to its
   *  end (then it may be reused). Idempotent. */
  close(): void;
}

export interface BufferedAnswer extends OutboundAnswerHead {
  body: Buffer;
}

/** A URL as it may appear in a message or a log: no credentials, no query (billing secrets). */
export function shownUrl(u: URL): string {
  return `${u.protocol}//${u.host}${u.pathname}`;
}

function seconds(ms: number): string {
  return `${ms / MS_PER_SECOND} s`;
}

function headerPairs(h: OutboundRequest['headers']): [string, string][] {
  if (!h) return [];
  return Array.isArray(h) ? [...h] : Object.entries(h);
}

interface Hop {
  target: URL;
  method: string;
  headers: [string, string][];
  body: string | Uint8Array | undefined;
}

/** The request a redirect leads to, as browsers and fetch make it. */
function redirected(from: Hop, status: number, location: string): Hop {
  const target = new URL(location, from.target);
  if (target.protocol !== 'http:' && target.protocol !== 'https:')
    throw new OutboundRequestError(
      'redirects',
      `${shownUrl(from.target)} redirects to a ${target.protocol} URL; only http and https are followed`,
    );
  const toGet =
    (status === 303 && from.method !== 'HEAD') ||
    ((status === 301 || status === 302) && from.method === 'POST');
  const crossOrigin = target.origin !== from.target.origin;
  const headers = from.headers.filter(([name]) => {
    const n = name.toLowerCase();
    return !(crossOrigin && CREDENTIAL_HEADERS.has(n)) && !(toGet && BODY_HEADERS.has(n));
  });
  return {
    target,
    method: toGet ? 'GET' : from.method,
    headers,
    body: toGet ? undefined : from.body,
  };
}

function send(hop: Hop, hold: (req: ClientRequest) => void): Promise<IncomingMessage> {
  return new Promise((answered, failed) => {
    const client = hop.target.protocol === 'https:' ? https : http;
    const headers: Record<string, string> = {};
    for (const [name, value] of hop.headers) headers[name] = value;
    // A connection of its own (no pool): nothing outlives the exchange, and no request lands on a
    // kept-alive socket the server is closing at that moment.
    const req = client.request(hop.target, { method: hop.method, headers, agent: false }, answered);
    hold(req);
    req.on('error', failed);
    req.end(hop.body);
  });
}

function networkError(target: URL, err: unknown): Error {
  if (err instanceof OutboundRequestError) return err;
  const e = err as NodeJS.ErrnoException;
  return new OutboundRequestError(
    'network',
    `${shownUrl(target)}: ${e.message}`,
    undefined,
    e.code,
  );
}

/** Send the request and resolve with the answer's head once it arrived; the deadline keeps
 *  running over the body until it is read to its end or the answer is closed. */
export async function openWithDeadline(url: string, req: OutboundRequest): Promise<OpenAnswer> {
  const first = parseTarget(url);
  let hop: Hop = {
    target: first,
    method: (req.method ?? 'GET').toUpperCase(),
    headers: headerPairs(req.headers),
    body: req.body,
  };
  let current: ClientRequest | undefined;
  let answered = false;
  const guard = new ReadGuard(
    req.clock ?? systemClock,
    req.idleMs,
    () =>
      new OutboundRequestError(
        'idle',
        `no data from ${shownUrl(hop.target)} for ${seconds(req.idleMs ?? 0)}`,
      ),
    (err) => current?.destroy(err),
  );
  guard.limit(req.deadlineMs, () =>
    answered
      ? new OutboundRequestError(
          'deadline',
          `answer from ${shownUrl(hop.target)} not complete in ${seconds(req.deadlineMs)}`,
        )
      : new OutboundRequestError(
          'deadline',
          `no answer from ${shownUrl(hop.target)} in ${seconds(req.deadlineMs)}`,
        ),
  );
  if (req.signal)
    guard.watch(
      req.signal,
      () => new OutboundRequestError('stopped', `request to ${shownUrl(hop.target)} stopped`),
    );
  const maxRedirects = req.maxRedirects ?? MAX_REDIRECTS;
  for (let redirects = 0; ; redirects++) {
    let res: IncomingMessage;
    try {
      if (guard.tripped) throw guard.tripped;
      res = await guard.next(send(hop, (r) => (current = r)));
    } catch (err) {
      guard.stop();
      current?.destroy();
      throw networkError(hop.target, err);
    }
    // A late reset must not become an uncaught 'error': the reader sees it through the iterator.
    current?.on('error', () => undefined);
    res.on('error', () => undefined);
    const status = res.statusCode ?? 0;
    const location = res.headers.location;
    if (!REDIRECT_STATUSES.has(status) || !location || maxRedirects === 0) {
      answered = true;
      return answerOf(hop.target, res, guard, () => current);
    }
    res.destroy();
    current?.destroy();
    if (redirects >= maxRedirects) {
      guard.stop();
      throw new OutboundRequestError(
        'redirects',
        `more than ${maxRedirects} redirects from ${shownUrl(first)}`,
      );
    }
    try {
      hop = redirected(hop, status, location);
    } catch (err) {
      guard.stop();
      throw err;
    }
  }
}

function parseTarget(url: string): URL {
  let target: URL;
  try {
    target = new URL(url);
  } catch {
    throw new OutboundRequestError('url', `not a URL: ${url.split('?')[0]}`);
  }
  if (target.protocol !== 'http:' && target.protocol !== 'https:')
    throw new OutboundRequestError(
      'url',
      `${shownUrl(target)}: only http:// and https:// URLs can be asked`,
    );
  return target;
}

function answerOf(
  target: URL,
  res: IncomingMessage,
  guard: ReadGuard,
  request: () => ClientRequest | undefined,
): OpenAnswer {
  const release = () => {
    guard.stop();
    if (!res.readableEnded) {
      res.destroy();
      request()?.destroy();
    }
  };
  async function* chunks(): AsyncGenerator<Buffer> {
    const it = res[Symbol.asyncIterator]();
    try {
      for (;;) {
        const n = (await guard.next(it.next())) as IteratorResult<Buffer>;
        if (n.done) return;
        yield n.value;
      }
    } catch (err) {
      throw networkError(target, err);
    } finally {
      release();
    }
  }
  return {
    url: shownUrl(target),
    status: res.statusCode ?? 0,
    statusText: res.statusMessage ?? '',
    headers: res.headers,
    chunks: chunks(),
    close: release,
  };
}

/** The whole answer, its body read into memory (at most `maxBodyBytes`: more fails with
 *  `too-large`), all within the deadline. */
export async function requestWithDeadline(
  url: string,
  req: OutboundRequest & { maxBodyBytes?: number },
): Promise<BufferedAnswer> {
  const answer = await openWithDeadline(url, req);
  const parts: Buffer[] = [];
  let size = 0;
  try {
    for await (const chunk of answer.chunks) {
      size += chunk.byteLength;
      if (req.maxBodyBytes !== undefined && size > req.maxBodyBytes)
        throw new OutboundRequestError(
          'too-large',
          `answer from ${answer.url} over ${req.maxBodyBytes} bytes`,
          answer.status,
        );
      parts.push(chunk);
    }
  } finally {
    answer.close();
  }
  const { url: at, status, statusText, headers } = answer;
  return { url: at, status, statusText, headers, body: Buffer.concat(parts) };
}
