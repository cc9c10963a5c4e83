// The segmenter: TS packets in; out come raw packets, access units per track and segment
// boundaries chosen on the master track (first video, else first audio) at random-access
// points once the target duration is reached. Splices (bus discontinuity or a timestamp
// jump) close the current segment everywhere and mark the next one.
import { TS_PACKET_SIZE } from '../mpegts/packet.ts';
import { type EsInfo, type Pes, TsDemux } from './demux/ts.ts';
import { isJump, PTS_HZ, unwrapPts } from './timeline.ts';
import { type AccessUnit, pictureStart, Track } from './tracks.ts';

export interface Boundary {
  /** Media sequence number of the segment that starts here. */
  seq: number;
  /** Unwrapped 90 kHz PTS of the first master sample. */
  pts: number;
  /** Global TS packet index where the segment's bytes start. */
  packetIndex: number;
  /** Discontinuity sequence number; `discontinuity` marks the first segment after a splice. */
  discSeq: number;
  discontinuity: boolean;
  /** Wall clock (ms) when the boundary was seen. */
  wallclock: number;
}

export interface SegmenterSink {
  tracks?(tracks: Track[]): void;
  /** Raw TS packets (whole packets, a view valid during the call) with the global index of
   *  the first, before the demuxer looks at them. */
  packets?(buf: Buffer, firstIndex: number): void;
  boundary(b: Boundary): void;
  /** An access unit; its `sample` is valid during the call only (a sink keeping it copies). */
  accessUnit?(track: Track, au: AccessUnit): void;
  /** Subtitle PES payload (teletext) with its unwrapped PTS. */
  subtitle?(track: Track, data: Buffer, pts: number): void;
  /** A splice: close what is open at `packetIndex`; the next boundary is discontinuous.
   *  `endPts` is where the master track's last sample ends (unwrapped 90 kHz), if known. */
  splice(packetIndex: number, endPts?: number): void;
}

export interface SegmenterOptions {
  targetDuration: number;
  now: () => number;
  /** Whether video access units need their sample (CMAF); without, only the head of each
   *  video PES is reassembled (HLS over TS cuts the packets themselves). Default true. */
  samples?: boolean;
}

/** Timestamps within this many ticks of the target still count as reaching it (rounding). */
const TARGET_TOLERANCE = PTS_HZ / 100;
/** Media time and arrival time may drift this far apart before the wall clock re-anchors. */
const WALLCLOCK_DRIFT_MS = 10_000;

export class Segmenter {
  readonly tracks = new Map<number, Track>();
  readonly demux: TsDemux;
  private sinks: SegmenterSink[] = [];
  /** Cut on a PTS grid of the target duration instead of after it (adaptive group members). */
  align = false;
  private master?: Track;
  private reference?: number;
  private lastDts = new Map<number, number>();
  private segStart?: number;
  private seq = 0;
  private discSeq = 0;
  private pendingDiscontinuity = false;
  /** Media time ↔ wall clock pair the boundaries' wall clocks are derived from. */
  private wallAnchor: { pts: number; wall: number } | undefined;
  /** End time of the master track's last access unit, for closing other tracks at a splice. */
  private masterEnd?: number;

  constructor(private opts: SegmenterOptions) {
    this.demux = new TsDemux({
      pmt: (streams) => this.onPmt(streams),
      pes: (pes) => this.onPes(pes),
    });
    this.demux.headOnly = (pid) => {
      if (this.opts.samples !== false) return undefined;
      const track = this.tracks.get(pid);
      return track?.type === 'video' ? pictureStart(track.es.kind) : undefined;
    };
    // Nothing keeps a media PES past its callback (access units lend their samples for the
    // call only; the CMAF writer copies them): the demuxer gathers them in one reused buffer
    // per PID. Subtitle PES go to the WebVTT writer and are never transient.
    this.demux.transient = (pid) => {
      const type = this.tracks.get(pid)?.type;
      return type === 'video' || type === 'audio';
    };
  }

  /** Switch video samples on or off (CMAF output added or removed in place). */
  set samples(on: boolean) {
    this.opts.samples = on;
  }

  addSink(sink: SegmenterSink): void {
    this.sinks.push(sink);
  }

  removeSink(sink: SegmenterSink): void {
    this.sinks = this.sinks.filter((s) => s !== sink);
  }

  get targetDuration(): number {
    return this.opts.targetDuration;
  }

  set targetDuration(s: number) {
    this.opts.targetDuration = s;
  }

  push(buf: Buffer): void {
    const whole = buf.length - (buf.length % TS_PACKET_SIZE);
    if (whole === 0) return;
    const packets = whole === buf.length ? buf : buf.subarray(0, whole);
    // Sinks see the whole batch first: boundaries found while demuxing it cut at a packet
    // index, so a sink holding the batch can split it there.
    const first = this.demux.packetCount;
    for (const s of this.sinks) s.packets?.(packets, first);
    this.demux.push(packets);
  }

  /** The input was spliced (input switch, restart): timestamps may jump from here. */
  discontinuity(): void {
    this.demux.flush();
    this.splice(this.demux.packetCount);
    this.demux.reset();
    for (const t of this.tracks.values()) t.resetCarry();
  }

  /** End of input: emit what is buffered. */
  flush(): void {
    this.demux.flush();
  }

  private splice(packetIndex: number): void {
    if (this.segStart === undefined && !this.pendingDiscontinuity && this.seq === 0) return;
    const end = this.masterEnd;
    for (const s of this.sinks) s.splice(packetIndex, end);
    this.masterEnd = undefined;
    this.segStart = undefined;
    this.reference = undefined;
    this.lastDts.clear();
    this.pendingDiscontinuity = true;
  }

  private onPmt(streams: EsInfo[]): void {
    this.tracks.clear();
    for (const es of streams) if (es.kind !== 'other') this.tracks.set(es.pid, new Track(es));
    const list = [...this.tracks.values()];
    this.master = list.find((t) => t.type === 'video') ?? list.find((t) => t.type === 'audio');
    for (const s of this.sinks) s.tracks?.(list);
  }

  private onPes(pes: Pes): void {
    const track = this.tracks.get(pes.pid);
    if (!track) return;
    // An audio PES without a timestamp carries only the rest of a frame begun in the previous
    // one (no frame starts in it): it continues at the time that frame was due.
    const continued = pes.pts === undefined ? track.audioContinuation : undefined;
    if (pes.pts === undefined && continued === undefined) return;
    const pts = continued ?? this.unwrap(pes.pts!);
    const dts = continued ?? (pes.dts === undefined ? pts : unwrapPts(pes.dts, pts));
    if (track.type === 'subtitle') {
      for (const s of this.sinks) s.subtitle?.(track, pes.data, pts);
      return;
    }
    const last = this.lastDts.get(pes.pid);
    if (last !== undefined && isJump(last, dts)) {
      track.resetCarry();
      this.splice(pes.packetIndex);
      this.reference = pts;
    }
    this.lastDts.set(pes.pid, dts);
    this.reference = dts;
    const aus = track.accessUnits(pes.data, pts, dts, pes.packetIndex, pes.size, pes.head);
    // New picture parameters (a resolution change) start a new run: the open segments close
    // here and the next one is discontinuous, so CMAF writes a new init segment for it.
    if (track.takeReconfigured()) {
      this.splice(pes.packetIndex);
      this.lastDts.set(pes.pid, dts);
      this.reference = dts;
    }
    for (const au of aus) {
      if (track === this.master) {
        this.maybeCut(track, au);
        const step =
          au.samples && track.audio
            ? (au.samples * PTS_HZ) / track.audio.sampleRate
            : PTS_HZ / (track.fps || 25);
        this.masterEnd = Math.max(this.masterEnd ?? 0, au.pts + step);
      }
      for (const s of this.sinks) s.accessUnit?.(track, au);
    }
  }

  private unwrap(raw: number): number {
    return this.reference === undefined ? raw : unwrapPts(raw, this.reference);
  }

  private maybeCut(track: Track, au: AccessUnit): void {
    if (!au.key || au.packetIndex < 0) return;
    if (track.type === 'video' && track.cmafCapable && !track.sampleEntry) return;
    if (this.segStart !== undefined) {
      if (this.align) {
        // Grid cut: a segment starts at the first keyframe of each target-long cell of the
        // PTS line, so renditions with aligned keyframes cut at the same PTS wherever they
        // joined (adaptive groups).
        const cell = (pts: number) =>
          Math.floor((pts + TARGET_TOLERANCE) / (this.opts.targetDuration * PTS_HZ));
        if (cell(au.pts) <= cell(this.segStart)) return;
      } else {
        const target = this.opts.targetDuration * PTS_HZ - TARGET_TOLERANCE;
        if (au.pts - this.segStart < target) return;
      }
    }
    this.segStart = au.pts;
    const splice = this.pendingDiscontinuity;
    const b: Boundary = {
      seq: this.seq++,
      pts: au.pts,
      packetIndex: au.packetIndex,
      discSeq: this.discSeq,
      discontinuity: false,
      wallclock: this.wallclockOf(au.pts, splice),
    };
    if (splice) {
      b.discSeq = ++this.discSeq;
      b.discontinuity = true;
      this.pendingDiscontinuity = false;
    }
    for (const s of this.sinks) s.boundary(b);
  }

  /**
   * Wall clock of a boundary: the arrival time of the first one after a start or splice, then
   * that anchor advanced by media time, so PROGRAM-DATE-TIME and archive chunk starts follow
   * the PTS line (arrival jitter, e.g. a stalled encoder, would show as false gaps). The anchor
   * is reset when media time and arrival time drift apart by more than WALLCLOCK_DRIFT_MS.
   */
  private wallclockOf(pts: number, splice: boolean): number {
    const now = this.opts.now();
    const a = this.wallAnchor;
    if (a && !splice) {
      const derived = a.wall + ((pts - a.pts) * 1000) / PTS_HZ;
      if (Math.abs(derived - now) <= WALLCLOCK_DRIFT_MS) return Math.round(derived);
    }
    this.wallAnchor = { pts, wall: now };
    return now;
  }
}
