// The stream engine's small parts: switch-log entries and the output bitrate meter.
import type { Clock } from '../util/clock.ts';

export const SWITCH_LOG_SIZE = 100;

export interface SwitchEntry {
  at: string;
  mono: number;
  from: number;
  to: number;
  reason: string;
  /** ms from the decision to the first packet of the new input on the output. */
  firstPacketMs?: number;
}

const METER_SLOTS = 10;
const METER_SLOT_MS = 1000;

/** Bytes per one-second slot over the last ten seconds: current rate and peak (bit/s). */
export class BitrateMeter {
  private slots: number[] = [];
  private current = 0;
  private slotStart: number;

  constructor(private readonly clock: Clock) {
    this.slotStart = clock.monotonic();
  }

  add(bytes: number): void {
    this.current += bytes;
  }

  sample(): void {
    const now = this.clock.monotonic();
    while (now - this.slotStart >= METER_SLOT_MS) {
      this.slots.push(this.current);
      if (this.slots.length > METER_SLOTS) this.slots.shift();
      this.current = 0;
      this.slotStart += METER_SLOT_MS;
    }
  }

  rate(): number {
    this.sample();
    const last = this.slots[this.slots.length - 1];
    return last === undefined ? 0 : (last * 8000) / METER_SLOT_MS;
  }

  peak(): number {
    return this.slots.length < 2 ? 0 : (Math.max(...this.slots) * 8000) / METER_SLOT_MS;
  }
}
