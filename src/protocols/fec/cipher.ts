// The prompeg `passphrase` (non-standard): AES-128-CTR over each media packet's payload (the
// bytes after the RTP header; the header stays clear so that FEC, reordering and standard RTP
// tools still work). Key: scrypt(passphrase, "sluice prompeg v1", N 2^14, r 8, p 1) → 16 bytes,
// derived once per input or output (src/protocols/crypto/aes-ctr.ts, shared with ps1). Counter
// block: SSRC (4 bytes) · RTP timestamp (4) · sequence number (2) · 0 (6): unique per packet of
// a sender run (the SSRC is random per run; a sequence number comes back only after 65,536
// packets, by then with another timestamp). No integrity check: CTR without a MAC hides the
// content, it does not authenticate it.
import { AesCtr, passphraseKey } from '../crypto/aes-ctr.ts';

const SALT = 'sluice prompeg v1';

export class PayloadCipher {
  private readonly ctr: AesCtr;
  private readonly iv = Buffer.alloc(16);

  constructor(passphrase: string) {
    this.ctr = new AesCtr(passphraseKey(passphrase, SALT));
  }

  /** Encrypt or decrypt (CTR is its own inverse) `payload` of the packet named by its header
   *  fields; returns new bytes. */
  apply(ssrc: number, timestamp: number, seq: number, payload: Buffer): Buffer {
    const iv = this.iv;
    iv.writeUInt32BE(ssrc >>> 0, 0);
    iv.writeUInt32BE(timestamp >>> 0, 4);
    iv.writeUInt16BE(seq & 0xffff, 8);
    return this.ctr.apply(iv, payload);
  }
}
