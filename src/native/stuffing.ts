// CBR stuffing for bitrate-mode 2/3: null packets, and a pacer that says how many to add so an
// output reaches a constant rate. Not hot (a few calls per second per output), so plain TS.
import { argError } from './errors.ts';
import { TS_PACKET_SIZE } from './ts.ts';

const NULL_PID_HI = 0x1f;
const NULL_PID_LO = 0xff;
const PAYLOAD_ONLY = 0x10;
const TEMPLATE_PACKETS = 64;

function makeNulls(n: number): Buffer {
  const b = Buffer.alloc(n * TS_PACKET_SIZE, 0xff);
  for (let i = 0; i < n; i++) {
    const o = i * TS_PACKET_SIZE;
    b[o] = 0x47;
    b[o + 1] = NULL_PID_HI;
    b[o + 2] = NULL_PID_LO;
    b[o + 3] = PAYLOAD_ONLY; // CC of null packets is undefined (13818-1 2.4.3.3): 0 is fine
  }
  return b;
}

const template = makeNulls(TEMPLATE_PACKETS);

/** `n` null packets (PID 0x1FFF), a fresh Buffer the caller may keep or modify. */
export function nullPackets(n: number): Buffer {
  if (!Number.isInteger(n) || n < 0 || n > 1_000_000) throw argError('n must be 0..1000000');
  if (n <= TEMPLATE_PACKETS) return Buffer.from(template.subarray(0, n * TS_PACKET_SIZE));
  return makeNulls(n);
}

/**
 * Paces an output at `bitrate` bit/s: call `due(sentBytes, nowMs)` on each tick with the bytes of
 * real packets sent since the start; it returns how many null packets to add so that the
 * output has carried bitrate × elapsed bits. Never negative: a burst of payload above the rate
 * is absorbed later (the caller should cap payload to the rate for true CBR).
 */
export class CbrPacer {
  private startMs: number | undefined;
  private stuffedBytes = 0;
  /** Payload bits above the target rate seen so far (the rate is too low for the content). */
  overshootBits = 0;

  constructor(readonly bitrate: number) {
    if (!Number.isFinite(bitrate) || bitrate <= 0) throw argError('bitrate must be > 0 bit/s');
  }

  due(sentBytes: number, nowMs: number): number {
    if (this.startMs === undefined) this.startMs = nowMs;
    const targetBytes = ((nowMs - this.startMs) * this.bitrate) / 8000;
    const missing = targetBytes - sentBytes - this.stuffedBytes;
    if (missing < 0) {
      this.overshootBits = Math.max(this.overshootBits, -missing * 8);
      return 0;
    }
    const n = Math.floor(missing / TS_PACKET_SIZE);
    this.stuffedBytes += n * TS_PACKET_SIZE;
    return n;
  }

  reset(): void {
    this.startMs = undefined;
    this.stuffedBytes = 0;
    this.overshootBits = 0;
  }
}
