// Constant-rate pacing for bitrate-modes 2 and 3: packets are queued and released on a short
// tick so the output carries exactly `rate` bit/s; when the queue runs dry, null packets fill in.

import type { Clock, Timer } from '../util/clock.ts';
import { nullPacket, TS_PACKET_SIZE } from './packet.ts';

const TICK_MS = 5;
/** More than this much queued means the rate is below the content: send it anyway. */
const MAX_QUEUE_MS = 1000;
const NULL = nullPacket();

export class ConstantRatePacer {
  private queue: Buffer[] = [];
  private queued = 0;
  private timer: Timer;
  private start = -1;
  private sent = 0;
  private rate = 0;
  private stuffed = 0;
  private overrun = 0;

  constructor(
    private readonly clock: Clock,
    private readonly rateFn: () => number,
    private readonly out: (buf: Buffer) => void,
  ) {
    this.timer = clock.setInterval(() => this.tick(), TICK_MS);
  }

  push(buf: Buffer): void {
    this.queue.push(buf);
    this.queued += buf.length;
  }

  /** Send whatever is queued now (stream ended). */
  drain(): void {
    for (const b of this.queue) this.out(b);
    this.queue = [];
    this.queued = 0;
  }

  stop(): void {
    this.timer.cancel();
    this.queue = [];
    this.queued = 0;
  }

  status(): Record<string, unknown> {
    return { rate: this.rate, stuffedPackets: this.stuffed, overrunBytes: this.overrun };
  }

  private tick(): void {
    const rate = this.rateFn();
    const now = this.clock.monotonic();
    if (rate <= 0) {
      this.drain();
      return;
    }
    if (rate !== this.rate || this.start < 0) {
      this.rate = rate;
      this.start = now;
      this.sent = 0;
    }
    const dueBytes = ((now - this.start) * rate) / 8000 - this.sent;
    const paced = Math.floor(dueBytes / TS_PACKET_SIZE) * TS_PACKET_SIZE;
    let budget = paced;
    const maxQueue = (rate / 8000) * MAX_QUEUE_MS;
    if (this.queued > maxQueue) {
      this.overrun += this.queued - maxQueue;
      budget = Math.max(
        budget,
        this.queued - Math.floor(maxQueue / TS_PACKET_SIZE) * TS_PACKET_SIZE,
      );
    }
    if (budget <= 0) return;
    const parts: Buffer[] = [];
    let take = budget;
    while (take > 0 && this.queue.length) {
      const head = this.queue[0]!;
      if (head.length <= take) {
        parts.push(head);
        this.queue.shift();
        take -= head.length;
      } else {
        parts.push(head.subarray(0, take));
        this.queue[0] = head.subarray(take);
        take = 0;
      }
    }
    this.queued -= budget - take;
    const nulls = take / TS_PACKET_SIZE;
    for (let i = 0; i < nulls; i++) parts.push(NULL);
    this.stuffed += nulls;
    // Only the paced bytes advance the schedule: bytes sent early to bound the backlog are not
    // owed back by a silent gap while the rest of the backlog waits.
    this.sent += paced;
    this.out(parts.length === 1 ? parts[0]! : Buffer.concat(parts));
  }
}
