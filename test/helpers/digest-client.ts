// An HTTP Digest client for tests that sign in from a loopback address that is not anonymous
// (127.0.0.2): asks for a challenge, signs (qop=auth, the server's first algorithm) and sends the
// request again. `digestOpen` hands back the signed response unread (an event stream).
import { randomBytes } from 'node:crypto';
import { type IncomingMessage, request } from 'node:http';
import {
  type DigestAlgorithm,
  digestResponse,
  parseDigestHeader,
} from '../../src/api/auth/digest.ts';

const TIMEOUT_MS = 10_000;

export interface DigestAccount {
  login: string;
  password: string;
  /** The client's own address. */
  from: string;
}

export interface DigestInit {
  method?: string;
  headers?: Record<string, string>;
  body?: string;
}

export interface Answer {
  status: number;
  headers: IncomingMessage['headers'];
  body: string;
}

function send(url: URL, from: string, init: DigestInit): Promise<IncomingMessage> {
  return new Promise((resolve, reject) => {
    const req = request(url, {
      method: init.method ?? 'GET',
      headers: init.headers,
      localAddress: from,
      timeout: TIMEOUT_MS,
      agent: false,
    });
    req.on('response', resolve);
    req.on('timeout', () => req.destroy(new Error(`${url} timed out`)));
    req.on('error', reject);
    req.end(init.body);
  });
}

function sign(challenge: string, a: DigestAccount, method: string, uri: string): string {
  const ch = parseDigestHeader(challenge);
  if (!ch) throw new Error(`not a Digest challenge: ${challenge}`);
  const algorithm = (ch['algorithm'] ?? 'MD5') as DigestAlgorithm;
  const cnonce = randomBytes(8).toString('hex');
  const nc = '00000001';
  const response = digestResponse({
    algorithm,
    login: a.login,
    realm: ch['realm']!,
    password: a.password,
    method,
    uri,
    nonce: ch['nonce']!,
    nc,
    cnonce,
  });
  return (
    `Digest username="${a.login}", realm="${ch['realm']}", nonce="${ch['nonce']}", ` +
    `uri="${uri}", algorithm=${algorithm}, qop=auth, nc=${nc}, cnonce="${cnonce}", ` +
    `response="${response}", opaque="${ch['opaque']}"`
  );
}

/** The signed response, its body not read yet. */
export async function digestOpen(
  url: string,
  a: DigestAccount,
  init: DigestInit = {},
): Promise<IncomingMessage> {
  const u = new URL(url);
  const method = init.method ?? 'GET';
  const first = await send(u, a.from, { ...init, body: undefined, method });
  first.resume();
  const challenge = first.headersDistinct['www-authenticate']?.[0];
  if (first.statusCode !== 401 || !challenge) {
    throw new Error(`${method} ${url}: expected a 401 challenge, got ${first.statusCode}`);
  }
  const authorization = sign(challenge, a, method, `${u.pathname}${u.search}`);
  return send(u, a.from, { ...init, method, headers: { ...init.headers, authorization } });
}

/** A signed request and its whole answer. */
export async function digestFetch(url: string, a: DigestAccount, init: DigestInit = {}) {
  const res = await digestOpen(url, a, init);
  res.setEncoding('utf8');
  let body = '';
  for await (const chunk of res) body += chunk;
  return { status: res.statusCode ?? 0, headers: res.headers, body } satisfies Answer;
}
