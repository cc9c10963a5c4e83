// The payload cipher the `passphrase` of prompeg and ps1 share: a 16-byte key stretched from the
// passphrase with scrypt (a salt per protocol), AES-128-CTR with a counter block the protocol
// builds so that it never repeats under one key. Hides the content; it does not authenticate.
import { createCipheriv, scryptSync } from 'node:crypto';

export const KEY_BYTES = 16;
const SCRYPT = { N: 1 << 14, r: 8, p: 1 };
export const PASSPHRASE_MIN = 10;
export const PASSPHRASE_MAX = 64;

/** scrypt(passphrase, salt, N 2^14, r 8, p 1) → 16 bytes; throws on a length out of range. */
export function passphraseKey(passphrase: string, salt: string): Buffer {
  if (passphrase.length < PASSPHRASE_MIN || passphrase.length > PASSPHRASE_MAX)
    throw new Error(`passphrase must be ${PASSPHRASE_MIN} to ${PASSPHRASE_MAX} characters`);
  return scryptSync(passphrase, salt, KEY_BYTES, SCRYPT);
}

/** AES-128-CTR under one key: encrypt or decrypt (its own inverse) with a 16-byte counter block. */
export class AesCtr {
  constructor(private readonly key: Buffer) {
    if (key.length !== KEY_BYTES) throw new Error(`AES-128 key must be ${KEY_BYTES} bytes`);
  }

  apply(iv: Buffer, payload: Buffer): Buffer {
    return createCipheriv('aes-128-ctr', this.key, iv).update(payload);
  }
}
