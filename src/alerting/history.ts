// The recent alert events for GET /data/alerts: a ring of at most `size` events, oldest
// overwritten first.
import type { AlertEvent } from './types.ts';

export class AlertHistory {
  private ring: (AlertEvent | undefined)[];
  private next = 0;
  private count = 0;

  constructor(private size: number) {
    this.ring = new Array(size);
  }

  add(ev: AlertEvent): void {
    this.ring[this.next] = ev;
    this.next = (this.next + 1) % this.size;
    this.count = Math.min(this.count + 1, this.size);
  }

  /** Newest first, at most `limit`. */
  recent(limit = this.size): AlertEvent[] {
    const out: AlertEvent[] = [];
    for (let i = 1; i <= Math.min(limit, this.count); i++) {
      out.push(this.ring[(this.next - i + this.size) % this.size]!);
    }
    return out;
  }

  /** A new size keeps the newest events that fit. */
  resize(size: number): void {
    if (size === this.size) return;
    const keep = this.recent(size).reverse();
    this.size = size;
    this.ring = new Array(size);
    this.next = 0;
    this.count = 0;
    for (const ev of keep) this.add(ev);
  }
}
