// The prompeg `passphrase` (non-standard): AES-128-CTR over each media packet's payload (the
// bytes after the RTP header; the header stays clear so that FEC, reordering and standard RTP
// tools still work). Key: scrypt(passphrase, "sluice prompeg v1", N 2^14, r 8, p 1) → 16 bytes,
// derived once per input or output. Counter block: SSRC (4 bytes) · RTP timestamp (4) · sequence
// number (2) · 0 (6): unique per packet of a sender run (the SSRC is random per run; a sequence
// number comes back only after 65,536 packets, by then with another timestamp). No integrity
// check: CTR without a MAC hides the content, it does not authenticate it.
import { createCipheriv, scryptSync } from 'node:crypto';

const SALT = 'sluice prompeg v1';
const KEY_BYTES = 16;
const SCRYPT = { N: 1 << 14, r: 8, p: 1 };
export const PASSPHRASE_MIN = 10;
export const PASSPHRASE_MAX = 64;

export class PayloadCipher {
  private readonly key: Buffer;
  private readonly iv = Buffer.alloc(16);

  constructor(passphrase: string) {
    if (passphrase.length < PASSPHRASE_MIN || passphrase.length > PASSPHRASE_MAX)
      throw new Error(`passphrase must be ${PASSPHRASE_MIN} to ${PASSPHRASE_MAX} characters`);
    this.key = scryptSync(passphrase, SALT, KEY_BYTES, SCRYPT);
  }

  /** Encrypt or decrypt (CTR is its own inverse) `payload` of the packet named by its header
   *  fields; returns new bytes. */
  apply(ssrc: number, timestamp: number, seq: number, payload: Buffer): Buffer {
    const iv = this.iv;
    iv.writeUInt32BE(ssrc >>> 0, 0);
    iv.writeUInt32BE(timestamp >>> 0, 4);
    iv.writeUInt16BE(seq & 0xffff, 8);
    const c = createCipheriv('aes-128-ctr', this.key, iv);
    return c.update(payload);
  }
}
