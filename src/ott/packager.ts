// One stream's packager: the segmenter fed from the stream bus, the HLS-TS writer and one
// CMAF writer per track, each with its segment store. Read by the request handlers.
import type { BusSink } from '../engine/bus.ts';
import { TS_PACKET_SIZE } from '../mpegts/packet.ts';
import type { Clock } from '../util/clock.ts';
import { CmafTrackWriter, type SpliceEnd } from './cmaf-writer.ts';
import { targetDurationOf } from './hls.ts';
import { type OttSettings, WINDOW_GRACE } from './options.ts';
import { type Boundary, Segmenter, type SegmenterSink } from './segmenter.ts';
import { SegmentStore } from './store.ts';
import type { Track } from './tracks.ts';
import { TsSegmentWriter } from './ts-writer.ts';
import { WebVttWriter } from './webvtt/writer.ts';

export interface CmafRendition {
  id: string;
  track: Track;
  writer: CmafTrackWriter;
  store: SegmentStore;
}

export class Packager implements BusSink {
  /** Takes bursts (BusSink.acceptsBursts): cuts by timestamps, not by arrival. */
  readonly acceptsBursts = true;
  readonly segmenter: Segmenter;
  readonly tsStore?: SegmentStore;
  /** Teletext subtitles as WebVTT (`ott-webvtt`). */
  readonly vtt?: WebVttWriter;
  renditions: CmafRendition[] = [];
  /** Wall clock of the first segment: DASH availabilityStartTime. */
  availabilityStart?: number;
  /** Wall clock where each discontinuity run began: DASH Period starts. */
  readonly periodWallclock = new Map<number, number>();
  packetCount = 0;
  discontinuities = 0;
  private tsWriter?: TsSegmentWriter;

  /** HLS-TS segments closed early for outgrowing the open-segment bound (no key frame). */
  get oversizeCuts(): number {
    return this.tsWriter?.oversizeCuts ?? 0;
  }

  constructor(
    public settings: OttSettings,
    clock: Clock,
  ) {
    this.segmenter = new Segmenter({
      targetDuration: settings.segmentDuration,
      now: () => clock.now(),
      samples: settings.cmaf,
    });
    this.segmenter.addSink(this.timeKeeper());
    if (settings.ts) {
      this.tsStore = new SegmentStore({ window: settings.window, grace: WINDOW_GRACE });
      this.tsWriter = new TsSegmentWriter(this.segmenter, this.tsStore);
      this.segmenter.addSink(this.tsWriter);
    }
    if (settings.webvtt) {
      this.vtt = new WebVttWriter({ window: settings.window, grace: WINDOW_GRACE });
      this.segmenter.addSink(this.vtt);
    }
  }

  packets(buf: Buffer): void {
    this.packetCount += buf.length / TS_PACKET_SIZE;
    this.segmenter.push(buf);
  }

  discontinuity(): void {
    this.discontinuities++;
    this.segmenter.discontinuity();
  }

  end(): void {
    this.segmenter.flush();
  }

  update(settings: OttSettings): void {
    this.settings = settings;
    this.segmenter.targetDuration = settings.segmentDuration;
    this.segmenter.samples = settings.cmaf;
    this.tsStore?.setWindow(settings.window);
    this.vtt?.setWindow(settings.window);
    for (const r of this.renditions) {
      r.store.setWindow(settings.window);
      r.writer.partTarget = settings.partDuration;
    }
  }

  /**
   * EXT-X-TARGETDURATION of every live playlist of the stream (TS, each CMAF rendition,
   * WebVTT): the longest segment of any window, or the configured length if longer, rounded to
   * the nearest integer (RFC 8216bis 4.4.3.1). One figure for all renditions: audio segments
   * run a frame longer or shorter than the video's (4.011 s beside 4.000 s), and rounding each
   * rendition up on its own gave audio 5 and video 4, with CAN-SKIP-UNTIL 30 beside 24.
   */
  targetDuration(): number {
    let max = this.settings.segmentDuration;
    if (this.tsStore) max = Math.max(max, this.tsStore.longest());
    for (const r of this.renditions) max = Math.max(max, r.store.longest());
    for (const r of this.vtt?.renditions ?? []) max = Math.max(max, r.store.longest());
    return targetDurationOf(max);
  }

  get cmafEnabled(): boolean {
    return this.settings.cmaf;
  }

  rendition(id: string): CmafRendition | undefined {
    return this.renditions.find((r) => r.id === id);
  }

  private timeKeeper(): SegmenterSink {
    return {
      tracks: (tracks) => this.onTracks(tracks),
      boundary: (b: Boundary) => {
        this.availabilityStart ??= b.wallclock;
        if (!this.periodWallclock.has(b.discSeq)) this.periodWallclock.set(b.discSeq, b.wallclock);
      },
      splice: () => {},
    };
  }

  private onTracks(tracks: Track[]): void {
    if (!this.settings.cmaf) return;
    for (const r of this.renditions) this.segmenter.removeSink(r.writer);
    const media = tracks.filter((t) => t.cmafCapable);
    const master = media.find((t) => t.type === 'video') ?? media.find((t) => t.type === 'audio');
    const spliceEnd: SpliceEnd = {};
    this.renditions = media.map((track) => {
      const store = new SegmentStore({ window: this.settings.window, grace: WINDOW_GRACE });
      const writer = new CmafTrackWriter(track, store, {
        partTarget: this.settings.partDuration,
        isMaster: track === master,
        spliceEnd,
      });
      return { id: `c${track.pid}`, track, writer, store };
    });
    // The master closes first at a splice: the other tracks end where it actually ended.
    const order = [...this.renditions].sort(
      (x, y) => Number(y.track === master) - Number(x.track === master),
    );
    for (const r of order) this.segmenter.addSink(r.writer);
  }
}
