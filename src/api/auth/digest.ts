// HTTP Digest authentication (RFC 7616), transport-free: builds challenges and checks
// Authorization headers. Used by the admin API (auth plugin) and usable by any other server.
import { createHash, createHmac, randomBytes, timingSafeEqual } from 'node:crypto';
import type { Clock } from '../../util/clock.ts';

export type DigestAlgorithm = 'SHA-256' | 'MD5';

export const DIGEST_ALGORITHMS: readonly DigestAlgorithm[] = ['SHA-256', 'MD5'];

const HASH_NAME: Record<DigestAlgorithm, string> = { 'SHA-256': 'sha256', MD5: 'md5' };
/** Nonce layout: 8 bytes issue time (ms, big endian) | 12 random bytes | 16 bytes HMAC. */
const NONCE_TIME_BYTES = 8;
const NONCE_RANDOM_BYTES = 12;
const NONCE_MAC_BYTES = 16;
const NONCE_BYTES = NONCE_TIME_BYTES + NONCE_RANDOM_BYTES + NONCE_MAC_BYTES;
const SECRET_BYTES = 32;
const OPAQUE_BYTES = 16;
/** Nonce counts remembered at most; past this the oldest are forgotten (and then refused). */
export const MAX_TRACKED_NONCES = 100_000;
/** Expired nonce counts are swept after this many new nonces. */
const SWEEP_EVERY = 1024;
const NC_PATTERN = /^[0-9a-fA-F]{8}$/;

export interface DigestOptions {
  realm: string;
  clock: Clock;
  lifetimeSec: number;
  /** Offered in this order (RFC 7616 §3.7: most preferred first). */
  algorithms?: readonly DigestAlgorithm[];
  /** Password of a login, or undefined when there is no such account. */
  password: (login: string) => string | undefined;
}

export type DigestResult =
  | { ok: true; login: string }
  | { ok: false; stale: boolean; reason: string };

/** Parse `Digest k=v, k="v", …` into lower-cased keys; undefined when not Digest. */
export function parseDigestHeader(header: string): Record<string, string> | undefined {
  const m = /^\s*Digest\s+/i.exec(header);
  if (!m) return undefined;
  const out: Record<string, string> = {};
  const s = header.slice(m[0].length);
  let i = 0;
  while (i < s.length) {
    while (i < s.length && (s[i] === ',' || s[i] === ' ' || s[i] === '\t')) i++;
    if (i >= s.length) break;
    const eq = s.indexOf('=', i);
    if (eq < 0) return undefined;
    const key = s.slice(i, eq).trim().toLowerCase();
    i = eq + 1;
    while (s[i] === ' ' || s[i] === '\t') i++;
    let value = '';
    if (s[i] === '"') {
      i++;
      while (i < s.length && s[i] !== '"') {
        if (s[i] === '\\' && i + 1 < s.length) i++;
        value += s[i];
        i++;
      }
      if (s[i] !== '"') return undefined; // unterminated quoted string
      i++;
    } else {
      const end = s.indexOf(',', i);
      value = (end < 0 ? s.slice(i) : s.slice(i, end)).trim();
      i = end < 0 ? s.length : end;
    }
    if (!key || key in out) return undefined; // empty or repeated parameter: malformed
    out[key] = value;
  }
  return out;
}

/** RFC 5987 ext-value (`UTF-8''percent-encoded`), used by `username*`. */
function decodeExtValue(v: string): string | undefined {
  const m = /^UTF-8'[^']*'(.*)$/i.exec(v);
  if (!m) return undefined;
  try {
    return decodeURIComponent(m[1]!);
  } catch {
    return undefined;
  }
}

function hash(alg: DigestAlgorithm, text: string): string {
  return createHash(HASH_NAME[alg]).update(text, 'utf8').digest('hex');
}

/** The `response` value a client computes for qop=auth (RFC 7616 §3.4.1). */
export function digestResponse(a: {
  algorithm: DigestAlgorithm;
  login: string;
  realm: string;
  password: string;
  method: string;
  uri: string;
  nonce: string;
  nc: string;
  cnonce: string;
}): string {
  const ha1 = hash(a.algorithm, `${a.login}:${a.realm}:${a.password}`);
  const ha2 = hash(a.algorithm, `${a.method}:${a.uri}`);
  return hash(a.algorithm, `${ha1}:${a.nonce}:${a.nc}:${a.cnonce}:auth:${ha2}`);
}

function sameText(a: string, b: string): boolean {
  const x = Buffer.from(a, 'utf8');
  const y = Buffer.from(b, 'utf8');
  // Compare equal-length buffers only; a length mismatch still costs one comparison.
  if (x.length !== y.length) {
    timingSafeEqual(x, x);
    return false;
  }
  return timingSafeEqual(x, y);
}

function quote(v: string): string {
  return `"${v.replace(/["\\]/g, '\\$&')}"`;
}

export class DigestAuthenticator {
  readonly algorithms: readonly DigestAlgorithm[];
  private current: { realm: string; lifetimeSec: number };
  private readonly secret = randomBytes(SECRET_BYTES);
  private readonly opaque = randomBytes(OPAQUE_BYTES).toString('base64url');
  /** Last nonce count accepted per nonce, with the nonce's issue time. */
  private readonly counts = new Map<string, { nc: number; issued: number }>();
  /** Nonces issued at or before this time and no longer tracked are refused as stale. */
  private forgottenUpTo = Number.NEGATIVE_INFINITY;
  private sinceSweep = 0;

  constructor(private readonly opts: DigestOptions) {
    this.current = { realm: opts.realm, lifetimeSec: opts.lifetimeSec };
    this.algorithms = opts.algorithms?.length ? opts.algorithms : DIGEST_ALGORITHMS;
  }

  get realm(): string {
    return this.current.realm;
  }

  get lifetimeSec(): number {
    return this.current.lifetimeSec;
  }

  /**
   * Take a new realm and nonce lifetime (the config changed). Nonces already issued are judged
   * by the new lifetime from then on; answers computed for the old realm are refused, and the
   * client's retry gets a challenge with the new one.
   */
  configure(settings: { realm: string; lifetimeSec: number }): void {
    this.current = { realm: settings.realm, lifetimeSec: settings.lifetimeSec };
  }

  /** WWW-Authenticate values, one per algorithm, sharing one fresh nonce. */
  challenges(stale = false): string[] {
    const nonce = this.issueNonce();
    return this.algorithms.map(
      (alg) =>
        `Digest realm=${quote(this.realm)}, qop="auth", algorithm=${alg}, nonce=${quote(nonce)}, ` +
        `opaque=${quote(this.opaque)}${stale ? ', stale=true' : ''}`,
    );
  }

  /** Check an Authorization header for a request with this method and request-target. */
  verify(method: string, uri: string, header: string): DigestResult {
    const p = parseDigestHeader(header);
    if (!p) return fail('not a well-formed Digest authorization');
    const login = p['username*'] !== undefined ? decodeExtValue(p['username*']) : p['username'];
    const { realm, nonce, response, cnonce, nc, qop, opaque } = p;
    if (login === undefined || !realm || !nonce || !response || !cnonce || !nc || !p['uri']) {
      return fail('missing Digest parameter');
    }
    if (p['userhash'] === 'true') return fail('userhash is not supported');
    if (realm !== this.realm) return fail('wrong realm');
    if (qop !== 'auth') return fail('qop must be auth');
    if (opaque !== this.opaque) return fail('wrong opaque');
    if (!NC_PATTERN.test(nc)) return fail('malformed nonce count');
    const algorithm = (p['algorithm'] ?? 'MD5').toUpperCase() as DigestAlgorithm;
    if (!this.algorithms.includes(algorithm)) return fail('algorithm not offered');
    // The digest covers `uri`; it must be this request's target or it could be replayed elsewhere.
    if (p['uri'] !== uri) return fail('uri does not match the request');
    const issued = this.nonceTime(nonce);
    if (issued === undefined) return fail('nonce not issued by this server');

    const password = this.opts.password(login);
    const expected = digestResponse({
      algorithm,
      login,
      realm,
      // Unknown login: compare against a random value so the answer takes the same time.
      password: password ?? randomBytes(SECRET_BYTES).toString('hex'),
      method,
      uri,
      nonce,
      nc,
      cnonce,
    });
    if (!sameText(expected, response.toLowerCase()) || password === undefined) {
      return fail('wrong credentials');
    }
    const now = this.opts.clock.now();
    const seen = this.counts.get(nonce);
    const expired = now - issued > this.current.lifetimeSec * 1000;
    if (expired || (!seen && issued <= this.forgottenUpTo)) {
      return { ok: false, stale: true, reason: 'nonce expired' };
    }
    const count = Number.parseInt(nc, 16);
    if (seen && count <= seen.nc) return fail('nonce count replayed');
    if (seen) seen.nc = count;
    else this.track(nonce, count, issued, now);
    return { ok: true, login };
  }

  private issueNonce(): string {
    const head = Buffer.alloc(NONCE_TIME_BYTES + NONCE_RANDOM_BYTES);
    head.writeBigUInt64BE(BigInt(Math.max(0, Math.floor(this.opts.clock.now()))), 0);
    randomBytes(NONCE_RANDOM_BYTES).copy(head, NONCE_TIME_BYTES);
    return Buffer.concat([head, this.mac(head)]).toString('base64url');
  }

  /** Issue time of a nonce this server made, or undefined when forged or malformed. */
  private nonceTime(nonce: string): number | undefined {
    const raw = Buffer.from(nonce, 'base64url');
    if (raw.length !== NONCE_BYTES || raw.toString('base64url') !== nonce) return undefined;
    const head = raw.subarray(0, NONCE_TIME_BYTES + NONCE_RANDOM_BYTES);
    if (!timingSafeEqual(raw.subarray(head.length), this.mac(head))) return undefined;
    return Number(raw.readBigUInt64BE(0));
  }

  private mac(head: Buffer): Buffer {
    return createHmac('sha256', this.secret).update(head).digest().subarray(0, NONCE_MAC_BYTES);
  }

  private track(nonce: string, nc: number, issued: number, now: number): void {
    const horizon = now - this.current.lifetimeSec * 1000;
    if (++this.sinceSweep >= SWEEP_EVERY || this.counts.size >= MAX_TRACKED_NONCES) {
      // An expired nonce is refused before its count is looked at, so its entry can go.
      this.sinceSweep = 0;
      for (const [n, e] of this.counts) if (e.issued < horizon) this.counts.delete(n);
    }
    if (this.counts.size >= MAX_TRACKED_NONCES) {
      // Still full: forget the oldest and remember how far back we forgot, so those nonces
      // are answered `stale` instead of being accepted again as if new.
      for (const [n, e] of this.counts) {
        if (this.counts.size < MAX_TRACKED_NONCES) break;
        this.forgottenUpTo = Math.max(this.forgottenUpTo, e.issued);
        this.counts.delete(n);
      }
    }
    this.counts.set(nonce, { nc, issued });
  }

  /** Number of nonces whose counts are tracked (for tests and metrics). */
  trackedNonces(): number {
    return this.counts.size;
  }
}

function fail(reason: string): DigestResult {
  return { ok: false, stale: false, reason };
}
