// The mosaic (docs/mosaic.md): a thumbnail per stream, refreshed every `refresh-sec` from the
// stream's latest key frame only (HttpTsFanout.keyFrame(): PAT + PMT + one access unit, decoded
// by an ffmpeg child for a batch of streams: no continuous decode), and the grid of all of
// them. Refreshes are spread over the period and go through a small pool of children. A stream that is not running, or has
// no key frame yet, shows the "no signal" card (made once per thumbnail size).
import type { Logger } from 'pino';
import type { Clock, Timer } from '../util/clock.ts';
import {
  type ChildResult,
  type GridLayout,
  gridArgs,
  gridLayout,
  JobPool,
  noSignalArgs,
  runFfmpeg,
  thumbnailArgs,
  thumbnailSize,
} from './thumbnail.ts';

/** A stream as the mosaic sees it. */
export interface MosaicSource {
  name: string;
  /** Running with a valid signal (a dead input shows the card). */
  live(): boolean;
  keyFrame(): { ts: Buffer; count: number } | null;
}

export interface MosaicSettings {
  columns: number;
  thumbnailWidth: number;
  refreshMs: number;
  /** ffmpeg children running at once. */
  workers: number;
  /** Streams whose key frames one child decodes. */
  batch: number;
}

export interface MosaicStats {
  thumbnails: number;
  failures: number;
  /** CPU seconds of the decoding children (thumbnails and grids). */
  cpuSec: number;
}

export interface MosaicStreamStatus {
  name: string;
  lastThumbnail: string | null;
  noSignal: boolean;
}

interface Thumb {
  jpeg: Buffer;
  /** Wall-clock ms of the key frame's decode. */
  at: number;
  /** Key-frame count it was made from (the same count is not decoded twice). */
  count: number;
}

export type RunChild = (args: string[], inputs: Buffer[], outputs: number) => Promise<ChildResult>;

export class Mosaic {
  readonly stats: MosaicStats = { thumbnails: 0, failures: 0, cpuSec: 0 };
  private thumbs = new Map<string, Thumb>();
  private card: Promise<Buffer> | null = null;
  private grid: { key: string; jpeg: Promise<Buffer> } | null = null;
  private pool: JobPool;
  private timer: Timer | null = null;
  private pendingTimers = new Set<Timer>();
  private inFlight = new Set<string>();
  private gen = 0;
  /** Aborted by close(): the children still running are killed. */
  private readonly abort = new AbortController();

  constructor(
    private settings: MosaicSettings,
    private readonly deps: {
      clock: Clock;
      log: Logger;
      streams: () => MosaicSource[];
      run?: RunChild;
    },
  ) {
    this.pool = new JobPool(settings.workers);
  }

  private get run(): RunChild {
    const signal = this.abort.signal;
    return this.deps.run ?? ((a, i, o) => runFfmpeg(a, i, o, { signal }));
  }

  private get size() {
    return thumbnailSize(this.settings.thumbnailWidth);
  }

  start(): void {
    this.refreshAll();
    this.timer = this.deps.clock.setInterval(() => this.refreshAll(), this.settings.refreshMs);
  }

  stop(): void {
    this.timer?.cancel();
    this.timer = null;
    for (const t of this.pendingTimers) t.cancel();
    this.pendingTimers.clear();
  }

  /** Stop for good: timers cancelled, children killed. */
  close(): void {
    this.stop();
    this.abort.abort();
  }

  update(next: MosaicSettings): void {
    const resized = next.thumbnailWidth !== this.settings.thumbnailWidth;
    const retimed = next.refreshMs !== this.settings.refreshMs;
    this.settings = next;
    this.pool = next.workers === this.pool.size ? this.pool : new JobPool(next.workers);
    this.grid = null;
    if (resized) {
      this.thumbs.clear();
      this.card = null;
      this.gen++;
    }
    if (resized || retimed) {
      this.stop();
      this.start();
    }
  }

  /** One refresh pass: the streams in batches of `batch`, each batch's turn at its own offset
   *  in the period (staggered: a hundred streams do not start their children at once). */
  refreshAll(): void {
    const list = this.deps.streams();
    const names = new Set(list.map((s) => s.name));
    for (const n of this.thumbs.keys()) if (!names.has(n)) this.thumbs.delete(n);
    const batches: MosaicSource[][] = [];
    for (let i = 0; i < list.length; i += this.settings.batch) {
      batches.push(list.slice(i, i + this.settings.batch));
    }
    const step = batches.length ? this.settings.refreshMs / batches.length : 0;
    batches.forEach((batch, i) => {
      if (i === 0) {
        void this.refresh(batch);
        return;
      }
      const t = this.deps.clock.setTimeout(() => {
        this.pendingTimers.delete(t);
        void this.refresh(batch);
      }, i * step);
      this.pendingTimers.add(t);
    });
  }

  /** Decode the new key frames of `streams` (live ones whose latest key frame is not the one
   *  decoded already) in one child; when that child fails, each alone, so one broken stream
   *  does not cost the others their thumbnails. Failures are counted and logged. */
  async refresh(streams: MosaicSource[]): Promise<void> {
    const due: { s: MosaicSource; kf: { ts: Buffer; count: number } }[] = [];
    for (const s of streams) {
      if (this.inFlight.has(s.name) || !s.live()) continue;
      const kf = s.keyFrame();
      if (kf && this.thumbs.get(s.name)?.count !== kf.count) due.push({ s, kf });
    }
    if (due.length === 0) return;
    for (const d of due) this.inFlight.add(d.s.name);
    try {
      if (!(await this.decode(due, due.length === 1)) && due.length > 1) {
        for (const d of due) await this.decode([d], true);
      }
    } finally {
      for (const d of due) this.inFlight.delete(d.s.name);
    }
  }

  /** One child for `due`; false when it failed as a whole (`final`: count that as failures). */
  private async decode(
    due: { s: MosaicSource; kf: { ts: Buffer; count: number } }[],
    final: boolean,
  ): Promise<boolean> {
    const gen = this.gen;
    const { width, height } = this.size;
    const args = thumbnailArgs(due.length, width, height);
    const inputs = due.map((d) => d.kf.ts);
    let r: ChildResult;
    try {
      r = await this.pool.run(() => this.run(args, inputs, due.length));
    } catch (err) {
      this.stats.cpuSec += (err as { cpuSec?: number }).cpuSec ?? 0;
      if (final) {
        this.stats.failures += due.length;
        const names = due.map((d) => d.s.name);
        this.deps.log.warn(
          { streams: names, err: (err as Error).message },
          'mosaic thumbnail failed',
        );
      }
      return false;
    }
    this.stats.cpuSec += r.cpuSec;
    if (gen !== this.gen) return true;
    due.forEach(({ s, kf }, i) => {
      const jpeg = r.outs[i];
      if (!jpeg?.length) {
        this.stats.failures++;
        this.deps.log.warn({ stream: s.name }, 'mosaic thumbnail: no picture decoded');
        return;
      }
      this.stats.thumbnails++;
      this.thumbs.set(s.name, { jpeg, at: this.deps.clock.now(), count: kf.count });
      this.grid = null;
    });
    return true;
  }

  /** The "no signal" card at the current size (made once). */
  noSignal(): Promise<Buffer> {
    if (!this.card) {
      const { width, height } = this.size;
      const card = this.pool.run(() => this.run(noSignalArgs(width, height), [], 1));
      this.card = card.then((r) => {
        this.stats.cpuSec += r.cpuSec;
        if (!r.outs[0]?.length) throw new Error('ffmpeg made no card');
        return r.outs[0];
      });
      this.card.catch(() => {
        this.card = null;
      });
    }
    return this.card;
  }

  /** What a stream shows now: its latest thumbnail while live, else the card. */
  private picture(s: MosaicSource): Promise<Buffer> {
    const t = this.thumbs.get(s.name);
    return t && s.live() ? Promise.resolve(t.jpeg) : this.noSignal();
  }

  /** One stream's thumbnail, or null when the stream is not in the mosaic. */
  async preview(name: string): Promise<Buffer | null> {
    const s = this.deps.streams().find((x) => x.name === name);
    return s ? this.picture(s) : null;
  }

  /** The grid of every stream in the mosaic, `columns` per row; remade when a picture changed. */
  async image(): Promise<Buffer> {
    const list = this.deps.streams();
    const key = list
      .map((s) => `${s.name}:${s.live() ? (this.thumbs.get(s.name)?.count ?? '-') : '-'}`)
      .join('/');
    if (this.grid?.key !== key) {
      const jpeg = this.compose(list);
      this.grid = { key, jpeg };
      jpeg.catch(() => {
        if (this.grid?.jpeg === jpeg) this.grid = null;
      });
    }
    return this.grid.jpeg;
  }

  private async compose(list: MosaicSource[]): Promise<Buffer> {
    if (list.length === 0) return this.noSignal();
    const pictures = await Promise.all(list.map((s) => this.picture(s)));
    const { width, height } = this.size;
    const layout: GridLayout = gridLayout(list.length, this.settings.columns, width, height);
    const r = await this.pool.run(() => this.run(gridArgs(layout), [Buffer.concat(pictures)], 1));
    this.stats.cpuSec += r.cpuSec;
    if (!r.outs[0]?.length) throw new Error('ffmpeg made no grid');
    return r.outs[0];
  }

  /** Per stream: when its thumbnail was last made (ISO time), and whether it shows the card. */
  status(): MosaicStreamStatus[] {
    return this.deps.streams().map((s) => this.streamStatus(s));
  }

  /** One stream's part of status(), or undefined when it is not in the mosaic. */
  statusOf(name: string): MosaicStreamStatus | undefined {
    const s = this.deps.streams().find((x) => x.name === name);
    return s && this.streamStatus(s);
  }

  private streamStatus(s: MosaicSource): MosaicStreamStatus {
    const t = this.thumbs.get(s.name);
    return {
      name: s.name,
      lastThumbnail: t ? new Date(t.at).toISOString() : null,
      noSignal: !t || !s.live(),
    };
  }
}
