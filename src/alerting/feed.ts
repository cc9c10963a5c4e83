// The in-process feed of alert events (the dashboard's Server-Sent Events stream subscribes to
// it): synchronous fan-out; a listener that throws is dropped, never blocks the others.
import type { AlertEvent } from './types.ts';

export type FeedListener = (ev: AlertEvent) => void;

export class AlertFeed {
  private readonly listeners = new Set<FeedListener>();

  /** Returns the function that unsubscribes. */
  subscribe(fn: FeedListener): () => void {
    this.listeners.add(fn);
    return () => this.listeners.delete(fn);
  }

  publish(ev: AlertEvent): void {
    for (const fn of this.listeners) {
      try {
        fn(ev);
      } catch {
        this.listeners.delete(fn);
      }
    }
  }

  get subscribers(): number {
    return this.listeners.size;
  }
}
