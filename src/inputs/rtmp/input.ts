// `rtmp` input (docs/inputs-pull.md). Pull: `rtmp[s]://host[:port]/app/stream` — connect,
// createStream, play; FLV audio/video → MPEG-TS (src/protocols/rtmp/remux.ts over the
// elementary-stream muxer); reconnect with backoff, the reason in words as the input's fault.
// Publish: `rtmp://@host[:port]/app/key` — the input waits for an encoder publishing `key` to
// `app` on a listening socket shared by every input on that port (listener.ts); one publisher
// at a time. Each pull attempt or publisher is a new muxer, spliced with onDiscontinuity.
import { bool, int, str } from '../../config/spec-values.ts';
import type { InputContext, InputTransport, TransportMetrics } from '../../engine/input.ts';
import type { AmfValue } from '../../protocols/rtmp/amf0.ts';
import { MSG_AUDIO, type RtmpMessage } from '../../protocols/rtmp/chunk.ts';
import { FlvRemuxer } from '../../protocols/rtmp/remux.ts';
import type { Timer } from '../../util/clock.ts';
import { resolveInterface } from '../../util/net.ts';
import { Backoff } from '../common.ts';
import { listenFor, type Publisher, type PublishSink, type PublishTarget } from './listener.ts';
import { PullSession } from './pull.ts';
import { parseRtmpUrl, type RtmpUrl } from './url.ts';

/** A pull that played at least this long resets the reconnect backoff. */
const STABLE_MS = 10_000;

interface Counters {
  bytes: number;
  videoFrames: number;
  audioFrames: number;
  skippedFrames: number;
  badTags: number;
  reconnects: number;
  publishes: number;
  refused: number;
}

export class RtmpInput implements InputTransport, PublishTarget {
  private readonly backoff: Backoff;
  private readonly url: RtmpUrl | null;
  private readonly urlError: string;
  private readonly traceOn: boolean;
  private readonly timeoutMs: number;
  private closed = false;
  private session: PullSession | null = null;
  private remux: FlvRemuxer | null = null;
  private sessions = 0;
  private state = 'idle';
  private faultText = '';
  private lastError = '';
  private lastStatus = '';
  private publisher: Publisher | null = null;
  private publisherIdle: Timer | null = null;
  private lastPublishIn = 0;
  private lastRefused = '';
  private listenError = '';
  private unlisten: (() => void) | null = null;
  /** Settles at the listening socket's first word on its state (opened()). */
  private listened: { p: Promise<void>; settle(error: string): void } | null = null;
  /** The most the input has held of what the origin sent (messages begun, frames held). */
  private heldPeak = 0;
  private readonly c: Counters = {
    bytes: 0,
    videoFrames: 0,
    audioFrames: 0,
    skippedFrames: 0,
    badTags: 0,
    reconnects: 0,
    publishes: 0,
    refused: 0,
  };

  constructor(
    private readonly cfg: Record<string, unknown>,
    private readonly ctx: InputContext,
  ) {
    this.backoff = new Backoff(ctx.clock);
    this.traceOn = bool(cfg, 'trace', false);
    this.timeoutMs = int(cfg, 'client-timeout', 10) * 1000;
    let url: RtmpUrl | null = null;
    let err = '';
    try {
      url = parseRtmpUrl(str(cfg, 'url'));
    } catch (e) {
      err = (e as Error).message;
    }
    this.url = url;
    this.urlError = err;
  }

  get app(): string {
    return this.url?.app ?? '';
  }

  get key(): string {
    return this.url?.stream ?? '';
  }

  start(): void {
    if (!this.url) {
      this.faultText = this.urlError;
      return;
    }
    if (this.url.listen) {
      this.state = 'waiting';
      this.faultText = `waiting for a publisher on rtmp://${this.url.host}:${this.url.port}/${this.url.app}`;
      this.listened = settleOnce();
      try {
        this.unlisten = listenFor(this.url.host, this.url.port, this, this.ctx.clock);
      } catch (err) {
        this.faultText = (err as Error).message;
        this.listened.settle(this.faultText);
      }
      return;
    }
    this.connect();
  }

  // --- pull -----------------------------------------------------------------------------------

  private connect(): void {
    if (this.closed || !this.url) return;
    let localAddress = '';
    try {
      localAddress = resolveInterface(str(this.cfg, 'bind-if'));
    } catch (err) {
      this.faultText = (err as Error).message;
      return;
    }
    this.state = 'connecting';
    const session = new PullSession(
      {
        url: this.url,
        localAddress,
        timeoutMs: this.timeoutMs,
        tlsVerify: bool(this.cfg, 'tls-verify', false),
        clock: this.ctx.clock,
      },
      {
        trace: (msg, data) => this.trace(msg, data),
        playing: () => {
          this.state = 'playing';
        },
        statusCode: (code) => {
          this.lastStatus = code;
        },
        metadata: (v) => this.metadata(v),
        media: (m) => this.media(m),
        batch: (n) => this.batch(n),
        ended: (reason, playedMs) => this.pullEnded(session, reason, playedMs),
      },
    );
    this.session = session;
    this.newRemuxer();
    session.start();
  }

  private pullEnded(session: PullSession, reason: string, playedMs: number): void {
    if (this.session !== session) return;
    this.session = null;
    this.flush();
    if (this.closed) return;
    this.state = 'reconnecting';
    this.lastError = reason;
    this.faultText = reason;
    if (playedMs >= STABLE_MS && this.c.videoFrames + this.c.audioFrames > 0) this.backoff.reset();
    this.c.reconnects++;
    const d = this.backoff.schedule(() => this.connect());
    this.ctx.log.warn({ url: str(this.cfg, 'url'), reason, retryMs: d }, 'rtmp input reconnecting');
  }

  // --- publish --------------------------------------------------------------------------------

  accept(p: Publisher): PublishSink | string {
    if (this.closed) return 'input closing';
    if (this.publisher) return `already publishing (from ${this.publisher.peer})`;
    this.publisher = p;
    this.c.publishes++;
    this.state = 'publishing';
    this.faultText = '';
    this.lastPublishIn = this.ctx.clock.monotonic();
    this.newRemuxer();
    this.ctx.log.info({ peer: p.peer, app: this.app }, 'rtmp publisher started');
    this.publisherIdle = this.ctx.clock.setInterval(
      () => {
        if (this.ctx.clock.monotonic() - this.lastPublishIn >= this.timeoutMs) {
          p.close(`no data from the publisher in ${this.timeoutMs / 1000} s`);
        }
      },
      Math.min(1000, this.timeoutMs / 4),
    );
    return {
      metadata: (v) => this.metadata(v),
      media: (m) => this.media(m),
      batch: (n) => {
        this.lastPublishIn = this.ctx.clock.monotonic();
        this.batch(n);
      },
      ended: (reason) => {
        if (this.publisher !== p) return;
        this.publisher = null;
        this.publisherIdle?.cancel();
        this.publisherIdle = null;
        this.flush();
        this.lastError = reason;
        this.state = 'waiting';
        this.faultText = `waiting for a publisher (${reason})`;
        this.ctx.log.info({ peer: p.peer, reason }, 'rtmp publisher ended');
      },
    };
  }

  refused(peer: string, reason: string): void {
    this.c.refused++;
    this.lastRefused = `${peer}: ${reason}`;
    this.ctx.log.warn({ peer, reason, app: this.app }, 'rtmp publish refused');
  }

  /** Publish: resolves once the port listens, rejects with why it cannot. Pull: at once. */
  opened(): Promise<void> {
    return this.listened?.p ?? Promise.resolve();
  }

  listenState(error: string): void {
    this.listened?.settle(error);
    this.listenError = error;
    if (error) this.faultText = error;
    else if (!this.publisher && this.url) {
      this.faultText = `waiting for a publisher on rtmp://${this.url.host}:${this.url.port}/${this.url.app}`;
    }
  }

  // --- media ----------------------------------------------------------------------------------

  private newRemuxer(): void {
    this.flush();
    this.sessions++;
    const first = this.sessions === 1;
    let spliced = first;
    // Transient TS: onData's buffer is valid during the call (engine/input.ts), so the muxer
    // writes every batch into the one block.
    this.remux = new FlvRemuxer(
      (b) => {
        if (!spliced) {
          spliced = true;
          this.ctx.onDiscontinuity?.('rtmp source reopened');
        }
        this.ctx.onData(b, true);
      },
      { transient: true },
    );
  }

  private metadata(values: AmfValue[]): void {
    this.trace('rtmp data message', { values });
    this.remux?.metadata(values);
  }

  private media(m: RtmpMessage): void {
    const r = this.remux;
    if (!r) return;
    if (m.type === MSG_AUDIO) r.audioMessage(m.timestamp, m.payload);
    else r.videoMessage(m.timestamp, m.payload);
  }

  private batch(n: number): void {
    this.c.bytes += n;
    this.heldPeak = Math.max(this.heldPeak, this.held());
    this.flush();
  }

  /** Bytes held now of what the origin sent: messages begun, frames held for the first PMT. */
  private held(): number {
    return (this.session?.pendingBytes ?? 0) + (this.remux?.heldBytes ?? 0);
  }

  private flush(): void {
    const r = this.remux;
    if (!r) return;
    r.flush();
    const before = this.c.videoFrames + this.c.audioFrames;
    this.c.videoFrames += r.counters.videoFrames;
    this.c.audioFrames += r.counters.audioFrames;
    this.c.skippedFrames += r.counters.skippedFrames;
    this.c.badTags += r.counters.badTags;
    r.counters.videoFrames = 0;
    r.counters.audioFrames = 0;
    r.counters.skippedFrames = 0;
    r.counters.badTags = 0;
    if (r.lastError) this.lastError = r.lastError;
    const flowing = this.c.videoFrames + this.c.audioFrames > before;
    if (flowing) {
      if (this.state === 'connecting') this.state = 'playing';
      if (this.faultText && (this.session || this.publisher)) this.faultText = '';
    } else if (r.unsupported.size > 0 && r.tracks === '') {
      this.faultText = `codec not supported: ${[...r.unsupported].join(', ')}`;
    }
  }

  trace(msg: string, data: Record<string, unknown>): void {
    if (this.traceOn) this.ctx.log.info(data, msg);
  }

  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    this.backoff.cancel();
    this.publisherIdle?.cancel();
    this.session?.close('input closed');
    this.publisher?.close('input closed');
    this.unlisten?.();
    this.unlisten = null;
  }

  fault(): string {
    return this.faultText;
  }

  status(): Record<string, unknown> {
    const u = this.url;
    return {
      mode: u?.listen ? 'publish' : 'pull',
      state: this.state,
      ...(u?.listen ? { listen: `${u.host}:${u.port}`, app: u.app } : {}),
      ...(this.publisher ? { publisher: this.publisher.peer } : {}),
      ...(this.remux?.tracks ? { tracks: this.remux.tracks } : {}),
      ...this.c,
      memory: { held: this.held(), peak: this.heldPeak },
      ...(this.remux ? { remux: this.remux.stats() } : {}),
      ...(this.lastStatus ? { lastStatus: this.lastStatus } : {}),
      ...(this.lastError ? { lastError: this.lastError } : {}),
      ...(this.lastRefused ? { lastRefused: this.lastRefused } : {}),
      ...(this.listenError ? { listenError: this.listenError } : {}),
    };
  }

  metrics(): TransportMetrics {
    return {
      protocol: 'rtmp',
      rttSeconds: 0,
      packets: {
        bytes: this.c.bytes,
        videoFrames: this.c.videoFrames,
        audioFrames: this.c.audioFrames,
        skippedFrames: this.c.skippedFrames,
        reconnects: this.c.reconnects,
        publishes: this.c.publishes,
        refused: this.c.refused,
      },
    };
  }
}

/** A promise settled by the first settle(): '' resolves, a message rejects. */
function settleOnce(): { p: Promise<void>; settle(error: string): void } {
  let settle: (error: string) => void = () => {};
  const p = new Promise<void>((resolve, reject) => {
    settle = (error) => (error ? reject(new Error(error)) : resolve());
  });
  p.catch(() => {}); // nobody need await it
  return { p, settle: (error) => settle(error) };
}
