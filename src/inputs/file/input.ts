// `file` input: plays a TS file in real time, paced by the PCR of the first PCR-carrying PID,
// looping at the end. With `device` the path is a device node: read as fast as it delivers,
// no pacing, reopened when it ends.
import { type FileHandle, open } from 'node:fs/promises';
import { bool, str } from '../../config/spec-values.ts';
import type { InputContext, InputTransport } from '../../engine/input.ts';
import { pid, SYNC_BYTE, TS_PACKET_SIZE } from '../../mpegts/packet.ts';
import { PCR_PER_MS, readPcr } from '../../mpegts/pcr.ts';
import type { Timer } from '../../util/clock.ts';

const READ_SIZE = TS_PACKET_SIZE * 348; // ~64 KB
/** Hand packets over this far ahead of their PCR time (smooths timer granularity). */
const LEAD_MS = 20;
/** A PCR jump beyond this (or backwards) is a discontinuity: pacing re-anchors. */
const MAX_PCR_STEP_MS = 2000;
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
  // pacing state
  private pcrPid = -1;
  private pcr0 = -1;
  private lastPcr = -1;
  private anchor = 0;
  private sincePcr = 0;

  constructor(
    private readonly cfg: Record<string, unknown>,
    private readonly ctx: InputContext,
  ) {}

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
    const buf = Buffer.alloc(READ_SIZE);
    let carry = Buffer.alloc(0);
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
      const { bytesRead } = await this.fh.read(buf, 0, READ_SIZE, null);
      if (bytesRead === 0) {
        await this.fh.close();
        this.fh = null;
        carry = Buffer.alloc(0);
        this.loops++;
        this.pcr0 = -1; // the loop restarts time: re-anchor on the next PCR
        // Counters and timestamps jump back to the file's start: splice there.
        this.ctx.onDiscontinuity?.(device ? 'device reopened' : 'file looped');
        if (device) await this.sleep(REOPEN_DELAY_MS);
        continue;
      }
      this.bytes += bytesRead;
      const data = carry.length
        ? Buffer.concat([carry, buf.subarray(0, bytesRead)])
        : Buffer.from(buf.subarray(0, bytesRead));
      const start = syncOffset(data);
      const usable = data.length - ((data.length - start) % TS_PACKET_SIZE);
      carry = Buffer.from(data.subarray(usable));
      const packets = data.subarray(start, usable);
      if (device) this.ctx.onData(packets);
      else await this.pace(packets);
    }
  }

  /** Emit packets no earlier than their PCR says, sleeping between PCRs. */
  private async pace(packets: Buffer): Promise<void> {
    let from = 0;
    for (let o = 0; o + TS_PACKET_SIZE <= packets.length && !this.closed; o += TS_PACKET_SIZE) {
      const packetPid = pid(packets, o);
      const pcr = this.pcrPid < 0 || packetPid === this.pcrPid ? readPcr(packets, o) : -1;
      if (pcr < 0) continue;
      this.pcrPid = packetPid;
      this.sincePcr = 0;
      const now = this.ctx.clock.monotonic();
      const step = (pcr - this.lastPcr) / PCR_PER_MS;
      if (this.pcr0 < 0 || step < 0 || step > MAX_PCR_STEP_MS) {
        this.pcr0 = pcr;
        this.anchor = now;
      }
      this.lastPcr = pcr;
      const due = this.anchor + (pcr - this.pcr0) / PCR_PER_MS;
      if (due > now + LEAD_MS) {
        if (o > from) this.ctx.onData(packets.subarray(from, o));
        from = o;
        await this.sleep(due - now - LEAD_MS);
      }
    }
    if (this.closed) return;
    if (from < packets.length) this.ctx.onData(packets.subarray(from));
    this.sincePcr += packets.length - from;
    if (this.sincePcr > NO_PCR_BYTES)
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
