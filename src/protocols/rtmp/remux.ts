// RTMP audio/video messages → MPEG-TS through the one elementary-stream muxer
// (src/mpegts/es-mux.ts). Pure. Times come from the FLV tags: DTS = the message timestamp
// (ms, 32 bits, unwrapped here), PTS = DTS + composition time; tracks use a 1 kHz timescale.
// A track is added at its sequence header (MP3: its first frame); frames are held (bounded)
// until every track that onMetaData announced is configured, so the first PMT lists them all.
// A repeated sequence header reconfigures the track (setConfig). Message payloads are read
// during the call only (the connection's reader reuses them): a held frame is a copy, and the
// copies are bounded in count and bytes (past either, the wait ends and they are written).
import { EsMuxer, type EsMuxerStats } from '../../mpegts/es-mux.ts';
import { type AmfValue, amfObject } from './amf0.ts';
import { parseAudioTag, parseVideoTag } from './flv.ts';

/** Frames held while waiting for the announced tracks' sequence headers. */
export const MAX_HELD_FRAMES = 256;
/** Bytes of the frames held (a second or two of media is a few hundred KiB). */
export const MAX_HELD_BYTES = 8 * 1024 * 1024;

export interface RemuxCounters {
  videoFrames: number;
  audioFrames: number;
  /** Frames of a codec this build does not carry, or before their track's sequence header. */
  skippedFrames: number;
  badTags: number;
}

interface Held {
  video: boolean;
  pts: number;
  dts: number;
  data: Buffer;
  key: boolean;
}

export class FlvRemuxer {
  private readonly mux: EsMuxer;
  private video = -1;
  private audio = -1;
  private videoCodec = '';
  private audioCodec = '';
  private expectVideo = false;
  private expectAudio = false;
  private held: Held[] = [];
  /** Bytes of the held frames' copies. */
  heldBytes = 0;
  private lastTs = -1;
  private wraps = 0;
  readonly counters: RemuxCounters = {
    videoFrames: 0,
    audioFrames: 0,
    skippedFrames: 0,
    badTags: 0,
  };
  /** Codecs met that cannot be carried (named, for the input's fault). */
  readonly unsupported = new Set<string>();
  lastError = '';

  /** `transient`: each batch of TS is valid during the sink call only (EsMuxerOptions). */
  constructor(sink: (packets: Buffer) => void, opts: { transient?: boolean } = {}) {
    this.mux = new EsMuxer({ sink, batchPackets: 64, transient: opts.transient === true });
  }

  /** onMetaData (from @setDataFrame or a play's data message): which tracks to wait for. */
  metadata(values: AmfValue[]): void {
    const i = values.indexOf('onMetaData');
    if (i < 0) return;
    const o = amfObject(values[i + 1] ?? null);
    if (!o) return;
    if (o['videocodecid'] !== undefined && o['videocodecid'] !== null) this.expectVideo = true;
    if (o['audiocodecid'] !== undefined && o['audiocodecid'] !== null) this.expectAudio = true;
  }

  /** One video message (timestamp in ms as on the wire). */
  videoMessage(timestamp: number, payload: Buffer): void {
    let v: ReturnType<typeof parseVideoTag>;
    try {
      v = parseVideoTag(payload);
    } catch (err) {
      this.bad(err);
      return;
    }
    if (!v.codec) {
      if (v.packet !== 'skip' || v.codecName !== 'empty') this.unsupportedCodec(v.codecName, true);
      return;
    }
    if (v.packet === 'config') {
      try {
        if (this.video < 0) {
          this.video = this.mux.addTrack({ codec: v.codec, config: v.data, timescale: 1000 });
          this.videoCodec = v.codec;
        } else if (this.videoCodec === v.codec) this.mux.setConfig(this.video, v.data);
        else this.unsupportedCodec(`${v.codecName} after ${this.videoCodec}`, true);
      } catch (err) {
        this.bad(err);
      }
      this.release();
      return;
    }
    if (v.packet !== 'frame' || v.data.length === 0) return;
    if (this.video < 0) {
      this.counters.skippedFrames++;
      return;
    }
    const dts = this.unwrap(timestamp);
    this.frame({ video: true, dts, pts: dts + v.cts, data: v.data, key: v.key });
  }

  audioMessage(timestamp: number, payload: Buffer): void {
    let a: ReturnType<typeof parseAudioTag>;
    try {
      a = parseAudioTag(payload);
    } catch (err) {
      this.bad(err);
      return;
    }
    if (!a.codec) {
      if (a.codecName !== 'empty') this.unsupportedCodec(a.codecName, false);
      return;
    }
    if (a.packet === 'config' || (a.codec === 'mp3' && this.audio < 0)) {
      try {
        if (this.audio < 0) {
          this.audio = this.mux.addTrack({
            codec: a.codec,
            timescale: 1000,
            ...(a.packet === 'config' ? { config: a.data } : {}),
          });
          this.audioCodec = a.codec;
        } else if (this.audioCodec === a.codec && a.packet === 'config') {
          this.mux.setConfig(this.audio, a.data);
        }
      } catch (err) {
        this.bad(err);
      }
      this.release();
      if (a.packet === 'config') return;
    }
    if (a.packet !== 'frame' || a.data.length === 0) return;
    if (this.audio < 0) {
      this.counters.skippedFrames++;
      return;
    }
    const dts = this.unwrap(timestamp);
    this.frame({ video: false, dts, pts: dts, data: a.data, key: true });
  }

  private unsupportedCodec(name: string, video: boolean): void {
    this.counters.skippedFrames++;
    if (!this.unsupported.has(name)) {
      this.unsupported.add(name);
      this.lastError = `codec not supported: ${name}`;
    }
    // A track that will never be configured is not waited for.
    if (video) this.expectVideo = false;
    else this.expectAudio = false;
    this.release();
  }

  private bad(err: unknown): void {
    this.counters.badTags++;
    this.lastError = err instanceof Error ? err.message : String(err);
  }

  /** 32-bit ms timestamps → a continuous ms count. */
  private unwrap(ts: number): number {
    if (this.lastTs >= 0 && ts < this.lastTs && this.lastTs - ts > 0x80000000) this.wraps++;
    else if (this.lastTs >= 0 && ts > this.lastTs && ts - this.lastTs > 0x80000000) {
      // A frame from just before a wrap arriving after it: counted in the previous lap.
      return ts + (this.wraps - 1) * 2 ** 32;
    }
    this.lastTs = ts;
    return ts + this.wraps * 2 ** 32;
  }

  private ready(): boolean {
    return (!this.expectVideo || this.video >= 0) && (!this.expectAudio || this.audio >= 0);
  }

  private frame(h: Held): void {
    if (this.waiting(h.data.length)) {
      h.data = Buffer.from(h.data);
      this.held.push(h);
      this.heldBytes += h.data.length;
      return;
    }
    this.writeHeld();
    this.write(h);
  }

  /** Whether frames are still held for an announced track (with room for `more` bytes). */
  private waiting(more = 0): boolean {
    return (
      !this.ready() && this.held.length < MAX_HELD_FRAMES && this.heldBytes + more <= MAX_HELD_BYTES
    );
  }

  private release(): void {
    if (this.held.length > 0 && !this.waiting()) this.writeHeld();
  }

  private writeHeld(): void {
    const held = this.held;
    this.held = [];
    this.heldBytes = 0;
    for (const h of held) this.write(h);
  }

  private write(h: Held): void {
    const track = h.video ? this.video : this.audio;
    const ok = this.mux.write(track, { pts: h.pts, dts: h.dts, data: h.data, key: h.key });
    if (!ok) return;
    if (h.video) this.counters.videoFrames++;
    else this.counters.audioFrames++;
  }

  flush(): void {
    this.mux.flush();
  }

  /** What the muxer carries: `h264+aac`, '' before the first sequence header. */
  get tracks(): string {
    return [this.videoCodec, this.audioCodec].filter(Boolean).join('+');
  }

  stats(): EsMuxerStats {
    return this.mux.stats();
  }
}
