// One client of the ps1 server (docs/ps1.md): its peer address, keys, sequence numbers, send
// buffer and what the client reports of itself (RTT, lost, recovered).

import type { SessionCipher } from '../../protocols/ps1/handshake.ts';
import { DataFlag, encodeData } from '../../protocols/ps1/packet.ts';
import { SendBuffer, type SendCounters } from '../../protocols/ps1/send-buffer.ts';

/** The last sequence number a session may use; the server ends the session before it. */
export const LAST_SEQ = 0xfffffffe;

export class ServerSession {
  seq = 0;
  rttMs: number;
  lastHeard: number;
  lastSent: number;
  clientLost = 0;
  clientRecovered = 0;
  readonly buffer: SendBuffer;

  constructor(
    readonly id: number,
    readonly address: string,
    readonly port: number,
    readonly login: string,
    readonly peerAuth: boolean,
    /** The AUTH's cnonce: a repeated AUTH (ACCEPT lost) is answered with `accept` again. */
    readonly cnonce: Buffer,
    readonly accept: Buffer,
    readonly bufferMs: number,
    overheadPct: number,
    initialRttMs: number,
    private readonly cipher: SessionCipher | null,
    private readonly startedAt: number,
  ) {
    this.rttMs = initialRttMs;
    this.lastHeard = startedAt;
    this.lastSent = startedAt;
    this.buffer = new SendBuffer(bufferMs, overheadPct, startedAt);
  }

  get key(): string {
    return `${this.address}:${this.port}`;
  }

  /** The next DATA of `payload` (whole TS packets), kept for retransmission. */
  data(payload: Buffer, now: number): Buffer {
    const seq = this.seq++;
    const body = this.cipher ? this.cipher.apply(seq, payload) : payload;
    const d = encodeData(
      this.id,
      seq,
      Math.floor(now - this.startedAt),
      this.cipher ? DataFlag.encrypted : 0,
      body,
    );
    this.buffer.add(seq, d, now);
    this.lastSent = now;
    return d;
  }

  get counters(): SendCounters {
    return this.buffer.counters;
  }

  status(): Record<string, unknown> {
    const c = this.buffer.counters;
    return {
      peer: this.key,
      login: this.login,
      ...(this.peerAuth ? { peerAuth: true } : {}),
      session: this.id.toString(16).padStart(8, '0'),
      rttMs: Math.round(this.rttMs * 10) / 10,
      bufferMs: this.bufferMs,
      sent: c.sent,
      retransmitted: c.retransmitted,
      nacked: c.nacked,
      expired: c.expired,
      capped: c.capped,
      lost: this.clientLost,
      recovered: this.clientRecovered,
    };
  }
}
