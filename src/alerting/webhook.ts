// The webhook sink: alert events POSTed one at a time, in order, to `webhook-url`. A failed
// POST (error, non-2xx, timeout) is retried with backoff; events wait in a bounded queue that
// drops its oldest when full. Nothing outside waits for it: push() only queues.
import type { Logger } from 'pino';
import type { Clock, Timer } from '../util/clock.ts';
import type { AlertEvent } from './types.ts';

/** POST `body` to `url`; resolves on a 2xx answer, rejects otherwise or after `timeoutMs`. */
export type Poster = (
  url: string,
  body: string,
  timeoutMs: number,
  signal: AbortSignal,
) => Promise<void>;

export interface WebhookSettings {
  url: string;
  timeoutMs: number;
  retries: number;
  queueSize: number;
}

export interface WebhookStats {
  /** Events delivered (a 2xx answer). */
  sent: number;
  /** Events given up after every retry failed. */
  failed: number;
  /** Events dropped from a full queue, or left when the URL was emptied. */
  dropped: number;
  /** POSTs retried. */
  retries: number;
  /** Events waiting, the one in flight included. */
  queued: number;
  lastError: string;
}

/** First retry after 1 s, doubled each time: a receiver back within a minute gets the event
 *  within a second or so of its return, and a long outage costs a POST a minute. */
export const BACKOFF_FIRST_MS = 1000;
export const BACKOFF_MAX_MS = 60_000;

export function backoffMs(attempt: number): number {
  return Math.min(BACKOFF_MAX_MS, BACKOFF_FIRST_MS * 2 ** Math.max(0, attempt - 1));
}

export class WebhookSink {
  private readonly queue: AlertEvent[] = [];
  private inFlight: AlertEvent | null = null;
  private attempt = 0;
  private retryTimer: Timer | null = null;
  private abort: AbortController | null = null;
  private closed = false;
  readonly stats: WebhookStats = {
    sent: 0,
    failed: 0,
    dropped: 0,
    retries: 0,
    queued: 0,
    lastError: '',
  };

  constructor(
    private settings: WebhookSettings,
    private readonly deps: { clock: Clock; log: Logger; post: Poster },
  ) {}

  update(next: WebhookSettings): void {
    this.settings = next;
    if (!next.url) {
      // No receiver any more: what waits is dropped, the event in flight too.
      this.retryTimer?.cancel();
      this.retryTimer = null;
      this.abort?.abort();
      this.abort = null;
      this.stats.dropped += this.queue.length + (this.inFlight ? 1 : 0);
      this.queue.length = 0;
      this.inFlight = null;
    }
    while (this.queue.length > next.queueSize) this.dropOldest();
    this.count();
  }

  push(ev: AlertEvent): void {
    if (this.closed || !this.settings.url) return;
    this.queue.push(ev);
    while (this.queue.length > this.settings.queueSize) this.dropOldest();
    this.count();
    this.pump();
  }

  close(): void {
    this.closed = true;
    this.retryTimer?.cancel();
    this.retryTimer = null;
    this.abort?.abort();
    this.queue.length = 0;
    this.inFlight = null;
    this.count();
  }

  private dropOldest(): void {
    this.queue.shift();
    this.stats.dropped++;
  }

  private count(): void {
    this.stats.queued = this.queue.length + (this.inFlight ? 1 : 0);
  }

  /** Start the next delivery unless one is in flight or waiting for its retry. */
  private pump(): void {
    if (this.closed || this.inFlight || !this.settings.url) return;
    const ev = this.queue.shift();
    if (!ev) return;
    this.inFlight = ev;
    this.attempt = 0;
    this.count();
    this.send();
  }

  private send(): void {
    const ev = this.inFlight;
    if (!ev || this.closed) return;
    const abort = new AbortController();
    this.abort = abort;
    const { url, timeoutMs } = this.settings;
    this.deps.post(url, JSON.stringify(ev), timeoutMs, abort.signal).then(
      () => this.done(abort, null),
      (err: unknown) => this.done(abort, err instanceof Error ? err.message : String(err)),
    );
  }

  private done(abort: AbortController, error: string | null): void {
    if (this.closed || this.abort !== abort) return;
    this.abort = null;
    if (error === null) {
      this.stats.sent++;
      this.finish();
      return;
    }
    this.stats.lastError = error;
    if (this.attempt < this.settings.retries && this.settings.url) {
      this.attempt++;
      this.stats.retries++;
      const wait = backoffMs(this.attempt);
      this.deps.log.debug({ seq: this.inFlight?.seq, err: error, wait }, 'alert webhook retry');
      this.retryTimer = this.deps.clock.setTimeout(() => {
        this.retryTimer = null;
        this.send();
      }, wait);
      return;
    }
    this.stats.failed++;
    this.deps.log.warn(
      { seq: this.inFlight?.seq, err: error, attempts: this.attempt + 1 },
      'alert webhook gave up on an event',
    );
    this.finish();
  }

  private finish(): void {
    this.inFlight = null;
    this.count();
    this.pump();
  }
}
