// HTTP client authentication (RFC 7617 Basic, RFC 7616 Digest with qop=auth, MD5 or SHA-256,
// and RFC 2069 Digest without qop), no I/O: read a WWW-Authenticate challenge and compute the
// Authorization header of each request. Used by the pull inputs (hls; rtsp next). The admin
// API's server side is src/api/auth/digest.ts (the layer table keeps api from importing this).
import { createHash, randomBytes } from 'node:crypto';

export interface Challenge {
  scheme: 'basic' | 'digest';
  params: Record<string, string>;
}

/** The challenges of a WWW-Authenticate header: `Digest realm="a", nonce="b", Basic realm="c"`. */
export function parseChallenges(header: string): Challenge[] {
  const out: Challenge[] = [];
  let cur: Challenge | null = null;
  let i = 0;
  const s = header;
  while (i < s.length) {
    while (i < s.length && (s[i] === ',' || s[i] === ' ' || s[i] === '\t')) i++;
    if (i >= s.length) break;
    const m = /^([A-Za-z0-9!#$%&'*+.^_`|~-]+)(\s*=\s*)?/.exec(s.slice(i, i + 256));
    if (!m) break;
    if (!m[2]) {
      // A scheme name starts a new challenge.
      const scheme = m[1]!.toLowerCase();
      cur = scheme === 'basic' || scheme === 'digest' ? { scheme, params: {} } : null;
      if (cur) out.push(cur);
      i += m[0].length;
      continue;
    }
    i += m[0].length;
    let value = '';
    if (s[i] === '"') {
      i++;
      while (i < s.length && s[i] !== '"') {
        if (s[i] === '\\' && i + 1 < s.length) i++;
        value += s[i];
        i++;
      }
      i++;
    } else {
      const end = s.indexOf(',', i);
      value = (end < 0 ? s.slice(i) : s.slice(i, end)).trim();
      i = end < 0 ? s.length : end;
    }
    if (cur) cur.params[m[1]!.toLowerCase()] = value;
  }
  return out;
}

export function basicAuthorization(login: string, password: string): string {
  return `Basic ${Buffer.from(`${login}:${password}`, 'utf8').toString('base64')}`;
}

const HASHES: Record<string, string> = { MD5: 'md5', 'SHA-256': 'sha256', 'MD5-SESS': 'md5' };

/** A Digest session with one server challenge: each authorization() counts nc up. */
export class DigestClient {
  private nc = 0;
  readonly algorithm: string;
  private readonly hash: string;

  constructor(
    private readonly challenge: Record<string, string>,
    private readonly login: string,
    private readonly password: string,
  ) {
    this.algorithm = (challenge['algorithm'] ?? 'MD5').toUpperCase();
    const h = HASHES[this.algorithm];
    if (!h) throw new Error(`Digest algorithm ${this.algorithm} not supported`);
    this.hash = h;
  }

  private h(s: string): string {
    return createHash(this.hash).update(s, 'utf8').digest('hex');
  }

  /** The Authorization header for `method` on `uri` (the request target as sent). */
  authorization(method: string, uri: string, cnonce = randomBytes(8).toString('hex')): string {
    const c = this.challenge;
    const realm = c['realm'] ?? '';
    const nonce = c['nonce'] ?? '';
    const qops = (c['qop'] ?? '').split(',').map((q) => q.trim().toLowerCase());
    const qop = qops.includes('auth') ? 'auth' : '';
    let ha1 = this.h(`${this.login}:${realm}:${this.password}`);
    if (this.algorithm === 'MD5-SESS') ha1 = this.h(`${ha1}:${nonce}:${cnonce}`);
    const ha2 = this.h(`${method}:${uri}`);
    const q = (v: string) => `"${v.replace(/["\\]/g, '\\$&')}"`;
    const parts = [
      `username=${q(this.login)}`,
      `realm=${q(realm)}`,
      `nonce=${q(nonce)}`,
      `uri=${q(uri)}`,
      `algorithm=${this.algorithm}`,
    ];
    let response: string;
    if (qop) {
      this.nc++;
      const nc = this.nc.toString(16).padStart(8, '0');
      response = this.h(`${ha1}:${nonce}:${nc}:${cnonce}:${qop}:${ha2}`);
      parts.push(`qop=${qop}`, `nc=${nc}`, `cnonce=${q(cnonce)}`);
    } else response = this.h(`${ha1}:${nonce}:${ha2}`);
    parts.push(`response=${q(response)}`);
    if (c['opaque'] !== undefined) parts.push(`opaque=${q(c['opaque'])}`);
    return `Digest ${parts.join(', ')}`;
  }
}
