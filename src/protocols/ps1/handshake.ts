// ps1 handshake crypto (docs/ps1.md "Handshake"): the stateless cookie, the client and server
// proofs (HMAC-SHA256 over both nonces and the login, keyed by the password or the cluster
// proof), the passphrase's key check and session key, and the DATA payload cipher.
import { createHmac, randomBytes, timingSafeEqual } from 'node:crypto';
import { AesCtr, passphraseKey } from '../crypto/aes-ctr.ts';
import { KEY_CHECK_SIZE, NONCE_SIZE } from './packet.ts';

const SALT = 'sluice ps1 v1';
/** A cookie is good in its 10 s bucket and the next one. */
export const COOKIE_BUCKET_MS = 10_000;

function hmac(key: Buffer | string, ...parts: (Buffer | string)[]): Buffer {
  const h = createHmac('sha256', key);
  for (const p of parts) h.update(p);
  return h.digest();
}

function u32(n: number): Buffer {
  const b = Buffer.alloc(4);
  b.writeUInt32BE(n >>> 0);
  return b;
}

function ipv4(address: string): Buffer {
  const parts = address.split('.').map(Number);
  if (parts.length !== 4 || !parts.every((p) => Number.isInteger(p) && p >= 0 && p <= 255))
    return Buffer.from(address, 'utf8'); // not IPv4 (ps1 is IPv4 only): still bound to it
  return Buffer.from(parts);
}

export function equal(a: Buffer, b: Buffer): boolean {
  return a.length === b.length && timingSafeEqual(a, b);
}

export function newNonce(): Buffer {
  return randomBytes(NONCE_SIZE);
}

/** The server's cookie maker: snonce from the client's address, port and cnonce, and time. */
export class CookieJar {
  private readonly secret = randomBytes(32);

  snonce(address: string, port: number, cnonce: Buffer, nowMs: number, back = 0): Buffer {
    const bucket = Math.floor(nowMs / COOKIE_BUCKET_MS) - back;
    const p = Buffer.alloc(2);
    p.writeUInt16BE(port & 0xffff);
    return hmac(this.secret, 'ps1 cookie v1', u32(bucket), ipv4(address), p, cnonce).subarray(
      0,
      NONCE_SIZE,
    );
  }

  /** Whether `snonce` is one this server gave `address`:`port` for `cnonce` in this or the
   *  previous bucket. */
  check(address: string, port: number, cnonce: Buffer, snonce: Buffer, nowMs: number): boolean {
    return (
      equal(this.snonce(address, port, cnonce, nowMs), snonce) ||
      equal(this.snonce(address, port, cnonce, nowMs, 1), snonce)
    );
  }
}

export function clientProof(secret: string, snonce: Buffer, cnonce: Buffer, login: string): Buffer {
  return hmac(secret, 'ps1 client v1', snonce, cnonce, Buffer.from(login, 'utf8'));
}

export function serverProof(
  secret: string,
  cnonce: Buffer,
  snonce: Buffer,
  session: number,
  login: string,
): Buffer {
  return hmac(secret, 'ps1 server v1', cnonce, snonce, u32(session), Buffer.from(login, 'utf8'));
}

/** The passphrase side of a session: key check in AUTH, then the session's DATA cipher. */
export class Ps1Passphrase {
  private readonly key: Buffer;

  /** scrypt runs here (tens of ms): once per input or output, not per session. */
  constructor(passphrase: string) {
    this.key = passphraseKey(passphrase, SALT);
  }

  keyCheck(snonce: Buffer, cnonce: Buffer): Buffer {
    return hmac(this.key, 'ps1 key check v1', snonce, cnonce).subarray(0, KEY_CHECK_SIZE);
  }

  session(snonce: Buffer, cnonce: Buffer, session: number): SessionCipher {
    const k = hmac(this.key, 'ps1 session key v1', snonce, cnonce, u32(session)).subarray(0, 16);
    return new SessionCipher(k, session);
  }
}

/** AES-128-CTR over DATA payloads; counter block session id ‖ sequence number ‖ 0. */
export class SessionCipher {
  private readonly ctr: AesCtr;
  private readonly iv = Buffer.alloc(16);

  constructor(key: Buffer, session: number) {
    this.ctr = new AesCtr(Buffer.from(key));
    this.iv.writeUInt32BE(session >>> 0, 0);
  }

  apply(seq: number, payload: Buffer): Buffer {
    this.iv.writeUInt32BE(seq >>> 0, 4);
    return this.ctr.apply(this.iv, payload);
  }
}
