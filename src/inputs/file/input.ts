// `file` input: plays a TS file in real time, paced by the PCR of the first PCR-carrying PID,
// looping at the end. With `device` the path is a device node: read as fast as it delivers,
// no pacing, reopened when it ends.
import { type FileHandle, open } from 'node:fs/promises';
import { bool, str } from '../../config/spec-values.ts';
import type { InputContext, InputTransport } from '../../engine/input.ts';
import { SYNC_BYTE, TS_PACKET_SIZE } from '../../mpegts/packet.ts';
import { PcrPacer } from '../../mpegts/pcr-pacer.ts';
import type { Timer } from '../../util/clock.ts';

/** Bytes per read (~1 MB: about a second of a 10 Mbit/s stream). Each read is a trip through
 *  libuv's thread pool, two wake-ups on a busy box; the pacer hands the bytes over on its own
 *  grid whatever the read size, so a large read only means fewer trips. */
const READ_SIZE = TS_PACKET_SIZE * 5577;
/** Files without PCR are paced at this rate once this many bytes passed without one. */
const NO_PCR_BYTES = 1_000_000;
const NO_PCR_RATE_BPS = 4_000_000;
const REOPEN_DELAY_MS = 1000;

export class FileInput implements InputTransport {
  private closed = false;
  private fh: FileHandle | null = null;
  private timer: Timer | null = null;
  private wake: (() => void) | null = null;
  private loops = 0;
  private bytes = 0;
  private lastError = '';
  /** The file cannot be opened (missing, no permission) or reading it failed for good. */
  private failing = false;
  private running: Promise<void> | null = null;
  private readonly pacer: PcrPacer;

  constructor(
    private readonly cfg: Record<string, unknown>,
    private readonly ctx: InputContext,
  ) {
    this.pacer = new PcrPacer(
      ctx.clock,
      (packets) => this.ctx.onData(packets),
      () => this.ctx.smooth?.() ?? true,
    );
  }

  start(): void {
    if (!str(this.cfg, 'file-path')) throw new Error('file input: file-path is not set');
    this.running = this.run().catch((err) => {
      this.lastError = (err as Error).message;
      this.failing = true;
      this.ctx.log.error({ err }, 'file input stopped');
    });
  }

  private async run(): Promise<void> {
    const path = str(this.cfg, 'file-path');
    const device = bool(this.cfg, 'device', false);
    // One buffer for the whole run: a read's packets have been handed over (InputContext.onData:
    // valid during the call) when the next read starts; the part packet at its end is moved to
    // the front and the next read lands after it.
    const buf = Buffer.allocUnsafeSlow(READ_SIZE + TS_PACKET_SIZE);
    let carry = 0;
    while (!this.closed) {
      if (!this.fh) {
        try {
          this.fh = await open(path, 'r');
          this.failing = false;
        } catch (err) {
          this.lastError = (err as Error).message;
          this.failing = true;
          await this.sleep(REOPEN_DELAY_MS);
          continue;
        }
        if (this.closed) break;
      }
      const { bytesRead } = await this.fh.read(buf, carry, READ_SIZE, null);
      if (bytesRead === 0) {
        await this.fh.close();
        this.fh = null;
        carry = 0;
        this.loops++;
        this.pacer.reset(); // the loop restarts time: re-anchor on the next PCR
        // Counters and timestamps jump back to the file's start: splice there.
        this.ctx.onDiscontinuity?.(device ? 'device reopened' : 'file looped');
        if (device) await this.sleep(REOPEN_DELAY_MS);
        continue;
      }
      this.bytes += bytesRead;
      const end = carry + bytesRead;
      const data = buf.subarray(0, end);
      const start = syncOffset(data);
      const usable = end - ((end - start) % TS_PACKET_SIZE);
      const packets = data.subarray(start, usable);
      if (device) this.ctx.onData(packets);
      else await this.pace(packets);
      buf.copyWithin(0, usable, end);
      carry = end - usable;
    }
  }

  /** Emit packets no earlier than their PCR says (PcrPacer); a file without PCR at a fixed
   *  rate once NO_PCR_BYTES passed without one. */
  private async pace(packets: Buffer): Promise<void> {
    await this.pacer.play(packets);
    if (!this.closed && this.pacer.bytesSincePcr > NO_PCR_BYTES)
      await this.sleep(((packets.length * 8) / NO_PCR_RATE_BPS) * 1000);
  }

  private sleep(ms: number): Promise<void> {
    return new Promise((resolve) => {
      if (this.closed) return resolve();
      this.wake = resolve;
      this.timer = this.ctx.clock.setTimeout(() => {
        this.timer = null;
        this.wake = null;
        resolve();
      }, ms);
    });
  }

  async close(): Promise<void> {
    this.closed = true;
    this.pacer.close();
    this.timer?.cancel();
    this.timer = null;
    this.wake?.();
    this.wake = null;
    await this.running;
    await this.fh?.close().catch(() => undefined);
    this.fh = null;
  }

  fault(): string {
    return this.failing ? this.lastError : '';
  }

  status(): Record<string, unknown> {
    return {
      bytes: this.bytes,
      loops: this.loops,
      ...(this.lastError ? { lastError: this.lastError } : {}),
    };
  }
}

/** First offset where three packets in a row start with the sync byte (0 if none found). */
export function syncOffset(b: Buffer): number {
  for (let i = 0; i + 2 * TS_PACKET_SIZE < b.length && i < TS_PACKET_SIZE; i++) {
    if (
      b[i] === SYNC_BYTE &&
      b[i + TS_PACKET_SIZE] === SYNC_BYTE &&
      b[i + 2 * TS_PACKET_SIZE] === SYNC_BYTE
    )
      return i;
  }
  return 0;
}
