// `dvb` input: the TS of the tuner adapter `adapter-id` (src/drivers/dvb-adapter/), read from
// the adapter's bus; several inputs and demuxers share one adapter. No adapter running, or an
// adapter without lock, is this input's fault, so the stream fails over; lock back is spliced.
import { int } from '../../config/spec-values.ts';
import type { StreamBus } from '../../engine/bus.ts';
import type { BusRef, InputContext, InputTransport } from '../../engine/input.ts';
import type { Timer } from '../../util/clock.ts';

/** How often the adapter's bus is looked up again (an adapter created late, or recreated). */
const RELOOK_MS = 1000;

export class DvbInput implements InputTransport {
  private readonly adapterId: number;
  private readonly ref: BusRef;
  private bus: StreamBus | undefined;
  private unsubscribe: (() => void) | null = null;
  private timer: Timer | null = null;
  private ended = false;
  private bytes = 0;
  private relocks = 0;
  private closed = false;

  constructor(
    cfg: Record<string, unknown>,
    private readonly ctx: InputContext,
  ) {
    this.adapterId = int(cfg, 'adapter-id', 0);
    this.ref = { kind: 'adapter', key: String(this.adapterId) };
  }

  start(): void {
    this.attach();
    this.timer = this.ctx.clock.setInterval(() => this.attach(), RELOOK_MS);
  }

  private attach(): void {
    if (this.closed) return;
    const bus = this.ctx.bus(this.ref);
    if (bus === this.bus) return;
    this.unsubscribe?.();
    this.unsubscribe = null;
    this.bus = bus;
    this.ended = false;
    if (!bus) return;
    this.unsubscribe = bus.subscribe({
      packets: (b) => {
        this.ended = false;
        this.bytes += b.length;
        this.ctx.onData(b); // shared with the adapter's other readers: not ours to rewrite
      },
      discontinuity: (reason) => {
        this.relocks++;
        this.ctx.onDiscontinuity?.(`tuner adapter ${this.adapterId}: ${reason}`);
      },
      end: () => {
        this.ended = true;
      },
    });
  }

  async close(): Promise<void> {
    this.closed = true;
    this.timer?.cancel();
    this.timer = null;
    this.unsubscribe?.();
    this.unsubscribe = null;
  }

  fault(): string {
    if (this.adapterId < 1) return 'adapter-id is not set';
    if (!this.bus) return `tuner adapter ${this.adapterId} is not running`;
    if (this.ended) return `tuner adapter ${this.adapterId} has no lock`;
    return '';
  }

  status(): Record<string, unknown> {
    return { adapterId: this.adapterId, bytes: this.bytes, relocks: this.relocks };
  }
}
