// The StreamBus implementation: fans a stream's output packets out to its sinks (HTTP-TS,
// OTT packager, DVR, UDP outputs). A sink that throws is removed so it cannot break the others.
import type { Logger } from 'pino';
import type { BusSink, StreamBus } from './bus.ts';

export class BusHub implements StreamBus {
  private sinks = new Set<BusSink>();

  constructor(private readonly log?: Logger) {}

  subscribe(sink: BusSink): () => void {
    this.sinks.add(sink);
    return () => {
      this.sinks.delete(sink);
    };
  }

  get size(): number {
    return this.sinks.size;
  }

  /** What the sinks read: the union of their programmes, or null when one reads the whole TS. */
  programmes(): Set<number> | null {
    const out = new Set<number>();
    for (const s of this.sinks) {
      const p = s.programmes?.() ?? null;
      if (p === null) return null;
      for (const n of p) out.add(n);
    }
    return out;
  }

  /** Some sink wants the packets evenly spread in time (one without `acceptsBursts`). */
  smooth(): boolean {
    for (const s of this.sinks) if (s.acceptsBursts !== true) return true;
    return false;
  }

  packets(buf: Buffer): void {
    if (buf.length === 0) return;
    for (const s of this.sinks) this.call(s, () => s.packets(buf));
  }

  discontinuity(reason: string): void {
    for (const s of this.sinks) this.call(s, () => s.discontinuity?.(reason));
  }

  end(): void {
    for (const s of this.sinks) this.call(s, () => s.end?.());
  }

  private call(s: BusSink, fn: () => void): void {
    try {
      fn();
    } catch (err) {
      this.sinks.delete(s);
      this.log?.error({ err }, 'stream bus sink failed and was removed');
    }
  }
}
