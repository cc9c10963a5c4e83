// CMAF writer of one track: access units → fragments (moof+mdat). Every fragment is an
// LL-HLS part of about the part target; a segment is its parts back to back, numbered by
// the segmenter's sequence and addressed as `<seq>.m4s` beside a shared `init.mp4`.
import { fragmentSize, type Sample, writeFragment } from './cmaf/fragment.ts';
import { initSegment } from './cmaf/init.ts';
import { type Lease, segmentPool } from './pool.ts';
import type { Boundary, SegmenterSink } from './segmenter.ts';
import type { PartDescriptor, SegmentStore } from './store.ts';
import { PTS_HZ } from './timeline.ts';
import type { AccessUnit, Track } from './tracks.ts';

/** Rounding slack when comparing a part's length with the part target. */
const PART_SLACK_S = 0.001;
/** A segment's block reserves at least this much address space, and this many times the last
 *  segment: memory follows what is written and the tail is trimmed at the end (./pool.ts), so
 *  head room costs no memory and spares most moves to a larger block (see ts-writer.ts). */
const MIN_SEGMENT_RESERVE = 4 * 1024 * 1024;
const RESERVE_FACTOR = 2;
/** Smallest arena for samples waiting for their part; a new one holds two of the last part. */
const MIN_ARENA_BYTES = 64 * 1024;

/** Shared by the writers of one stream: where the master track's written media ended at the
 *  last splice (90 kHz, presentation line), set by the master before the others close. */
export interface SpliceEnd {
  pts?: number;
}

interface OpenSeg {
  b: Boundary;
  start: number;
  /** The segment's bytes, a block of the segment pool: parts are written here back to back
   *  and served as views of it, so the whole segment needs no concatenation. */
  lease: Lease;
  buf: Buffer;
  used: number;
  parts: number;
  descs: PartDescriptor[];
  ticks: number;
  /** URI of the init segment this segment's samples need. */
  map: string;
}

export class CmafTrackWriter implements SegmenterSink {
  private boundaries: Boundary[] = [];
  private seg?: OpenSeg;
  private pending: AccessUnit[] = [];
  private fragmentSeq = 1;
  /** Next decode time in the track timescale, for gapless audio timing. */
  private nextDecode?: number;
  private reserve = MIN_SEGMENT_RESERVE;
  /** The sample entry the current init segment was made from, and how many inits so far. */
  private entry?: Buffer;
  private initVersion = 0;
  /** Master video: presentation time up to which every frame has been written (90 kHz), and
   *  the written frames shown after it (B-frame reordering leaves them ahead for a while). */
  private frontier?: number;
  /**
   * Video: the composition offset of the run's first frame (B-frame reordering delay), taken
   * off every sample's offset and added to decode times (trun v1 allows negative offsets), so
   * the first frame is shown at tfdt. Segment starts are then presentation times, as the audio
   * tracks' are; without this, players that map a new discontinuity by its decode time shift
   * the video by the delay and leave a hole of that length at a splice (hls.js did, 2 frames).
   */
  private ctoShift?: number;
  private ahead: number[] = [];
  /**
   * Samples waiting for their part are copied here as they come (access units lend theirs
   * only for the call: the demuxer gathers every PES in one reused buffer). Two arenas take
   * turns: the one filled before is reused once no pending sample is in it.
   */
  private arena: Buffer = Buffer.alloc(0);
  private arenaUsed = 0;
  private spare?: Buffer;
  /** Sample bytes of the last part written. */
  private partBytes = 0;
  readonly timescale: number;

  constructor(
    readonly track: Track,
    private store: SegmentStore,
    private opts: { partTarget: number; isMaster: boolean; spliceEnd?: SpliceEnd },
  ) {
    this.timescale = track.type === 'audio' ? 0 : PTS_HZ;
  }

  private get scale(): number {
    return this.timescale || this.track.audio?.sampleRate || PTS_HZ;
  }

  set partTarget(s: number) {
    this.opts.partTarget = s;
  }

  boundary(b: Boundary): void {
    this.boundaries.push(b);
  }

  accessUnit(track: Track, au: AccessUnit): void {
    if (track !== this.track || !track.sampleEntry) return;
    if (!this.store.init || this.entry !== track.sampleEntry) {
      // A new sample entry after the first (new picture parameters) comes after a splice:
      // it gets its own URI so players holding the old init never mix the two.
      const uri = this.store.init ? `init-${++this.initVersion}.mp4` : 'init.mp4';
      this.entry = track.sampleEntry;
      this.store.setInit(
        uri,
        initSegment({
          kind: track.type === 'video' ? 'video' : 'audio',
          timescale: this.scale,
          language: track.es.language,
          width: track.video?.width,
          height: track.video?.height,
          sampleEntry: track.sampleEntry,
        }),
      );
    }
    let next: Boundary | undefined;
    while (this.boundaries.length > 0 && this.reaches(au, this.boundaries[0]!))
      next = this.boundaries.shift();
    if (next) {
      if (this.seg) this.finishSegment(au.dts);
      this.startSegment(next, au);
    }
    if (!this.seg) return;
    // A part must not exceed the part target (LL-HLS), so flush before the sample that would.
    const end = au.dts + this.frameTicks(au);
    while (this.pending.length > 0 && this.overPart(end)) this.flushClosed(au.dts);
    this.pending.push({ ...au, sample: this.keep(au.sample) });
  }

  /** Whether the pending part would last longer than the part target if it ended at `end`. */
  private overPart(end: number): boolean {
    return (end - this.pending[0]!.dts) / PTS_HZ > this.opts.partTarget + PART_SLACK_S;
  }

  /** A copy of `sample` in the arena, valid until its part is written. */
  private keep(sample: Buffer): Buffer {
    const n = sample.length;
    if (this.arenaUsed + n > this.arena.length) {
      const spare = this.spare;
      const free =
        spare !== undefined &&
        spare.length >= n &&
        !this.pending.some((au) => au.sample.buffer === spare.buffer);
      this.spare = this.arena;
      this.arena = free
        ? spare
        : Buffer.allocUnsafeSlow(Math.max(MIN_ARENA_BYTES, 2 * (this.partBytes + n)));
      this.arenaUsed = 0;
    }
    const at = this.arenaUsed;
    this.arena.set(sample, at);
    this.arenaUsed = at + n;
    return this.arena.subarray(at, at + n);
  }

  splice(_packetIndex: number, segmenterEnd?: number): void {
    // Other tracks end exactly where the master's written media ends (not the segmenter's end,
    // which still counts B-frames the master video drops here), so every rendition's timeline
    // closes at the same point: no track overhangs into the gap before the next run (a DASH
    // Period placed right after this one would otherwise overlap the audio's tail).
    const shared = this.opts.spliceEnd;
    const endPts = this.opts.isMaster ? segmenterEnd : (shared?.pts ?? segmenterEnd);
    if (endPts !== undefined && !this.opts.isMaster) {
      this.pending = this.pending.filter((au) => au.pts < endPts);
      if (this.seg) this.closeAtMasterEnd(endPts);
    } else if (this.seg) {
      if (this.track.type === 'video') this.pending = this.pending.slice(0, this.closedPrefix());
      const last = this.pending[this.pending.length - 1];
      const prev = this.pending[this.pending.length - 2];
      const step = last && prev ? last.dts - prev.dts : this.frameTicks(last);
      this.finishSegment((last?.dts ?? 0) + step);
    }
    if (this.opts.isMaster && shared) {
      // Written end on the presentation line: decode end plus the composition shift (video),
      // converted from the track timescale.
      shared.pts =
        this.nextDecode === undefined ? undefined : (this.nextDecode * PTS_HZ) / this.scale;
    }
    this.seg = undefined;
    this.pending = [];
    this.boundaries = [];
    this.nextDecode = undefined;
    this.frontier = undefined;
    this.ahead = [];
    this.ctoShift = undefined;
  }

  /**
   * Flush a part that ends where the master video's presentation has no hole (a whole group
   * of B-frames), keeping the frames of an unfinished group for the next part, so a splice can
   * still drop them (see closedPrefix). Without such a point the whole pending run is flushed.
   */
  private flushClosed(nextDts: number): void {
    if (this.opts.isMaster && this.track.type === 'video') {
      const k = this.closedPrefix();
      if (k > 0 && k < this.pending.length) {
        const rest = this.pending.splice(k);
        this.flushPart(rest[0]!.dts);
        this.pending = rest;
        return;
      }
    }
    this.flushPart(nextDts);
  }

  /**
   * How many of the pending video frames to keep at a splice: the input went away at an
   * arbitrary packet, often inside a group of B-frames, so the last frames in decode order may
   * be shown after frames that never came. Written as they are, they leave a presentation hole
   * of a frame or two before the next run (hls.js reports a buffer hole and waits). The kept
   * prefix is the longest one after which every frame up to the latest shown has arrived; the
   * frames after it belong to the unfinished group and are dropped.
   */
  private closedPrefix(): number {
    const frame = this.frameTicks(undefined);
    let frontier = this.frontier;
    const ahead = [...this.ahead];
    let keep = ahead.length === 0 ? 0 : -1;
    this.pending.forEach((au, i) => {
      frontier = advanceFrontier(frontier, ahead, au.pts, frame);
      if (ahead.length === 0) keep = i + 1;
    });
    return Math.max(0, keep);
  }

  /**
   * Close a non-master track at a splice so it matches the master: the input that went away
   * usually delivered its audio a little behind its video, so the master may have opened
   * segments this track never reached and ends later. Each such segment is still made (from
   * the frames at or after its start, else from the last frame, moved over) so every
   * rendition has the same segment numbers, and the last sample is stretched to the master's
   * end so the buffered ranges of all tracks meet the next run without a hole (a hole makes
   * hls.js stall at the splice in LL-HLS mode).
   */
  private closeAtMasterEnd(endPts: number): void {
    for (const b of this.boundaries.filter((x) => x.pts < endPts)) {
      const seg = this.seg!;
      let at = this.pending.findIndex((au) => this.reaches(au, b));
      if (at < 0) at = this.pending.length - 1;
      if (at < 0 || (at === 0 && seg.descs.length === 0)) continue;
      const rest = this.pending.splice(at);
      this.finishSegment(rest[0]!.dts);
      this.startSegment(b, rest[0]!);
      this.pending = rest;
    }
    this.finishSegment(endPts, endPts);
  }
  private frameTicks(au: AccessUnit | undefined): number {
    if (au?.samples && this.track.audio) return (au.samples * PTS_HZ) / this.track.audio.sampleRate;
    return this.track.fps > 0 ? PTS_HZ / this.track.fps : PTS_HZ / 25;
  }

  private reaches(au: AccessUnit, b: Boundary): boolean {
    if (this.opts.isMaster) return au.pts === b.pts && au.key;
    if (this.track.type === 'video') return au.key && au.pts >= b.pts;
    return au.pts + this.frameTicks(au) / 2 >= b.pts;
  }

  private startSegment(b: Boundary, au: AccessUnit): void {
    if (this.track.type === 'video') this.ctoShift ??= Math.max(0, au.pts - au.dts);
    const start = this.decodeTime(au);
    const lease = segmentPool.acquire(this.reserve);
    this.seg = {
      b,
      start,
      lease,
      buf: lease.buf,
      used: 0,
      parts: 0,
      descs: [],
      ticks: 0,
      map: this.store.initUri,
    };
    this.store.begin({
      seq: b.seq,
      discSeq: b.discSeq,
      discontinuity: b.discontinuity,
      start,
      wallclock: b.wallclock,
      parts: this.seg.descs,
      map: this.store.initUri,
    });
  }

  /** Decode time of an access unit in the track timescale; audio stays gapless while close.
   *  Video decode times are moved later by the run's first composition offset (see ctoShift). */
  private decodeTime(au: AccessUnit): number {
    const t = Math.round(((au.dts + (this.ctoShift ?? 0)) * this.scale) / PTS_HZ);
    if (this.track.type !== 'audio' || this.nextDecode === undefined) return t;
    return Math.abs(t - this.nextDecode) <= (au.samples ?? 0) ? this.nextDecode : t;
  }

  /** Write the pending samples as a part; `stretchTo` (90 kHz) fits the last sample's length so
   *  the part ends there (closing a track at a splice). */
  private flushPart(nextDts: number, stretchTo?: number): void {
    const seg = this.seg!;
    const aus = this.pending;
    if (aus.length === 0) return;
    this.pending = [];
    const base = this.decodeTime(aus[0]!);
    const samples: Sample[] = aus.map((au, i) => {
      const nd = aus[i + 1]?.dts ?? nextDts;
      const duration =
        this.track.type === 'audio' && au.samples
          ? au.samples
          : Math.max(1, Math.round(((nd - au.dts) * this.scale) / PTS_HZ));
      return {
        data: au.sample,
        duration,
        cto: Math.round(((au.pts - au.dts - (this.ctoShift ?? 0)) * this.scale) / PTS_HZ),
        sync: au.key,
      };
    });
    let ticks = 0;
    let bytes = 0;
    for (const s of samples) {
      ticks += s.duration;
      bytes += s.data.length;
    }
    this.partBytes = bytes;
    if (stretchTo !== undefined) {
      // Fit the last sample so the part ends exactly there: lengthened over missing media, or
      // shortened when the frame straddles the end (at most one audio frame).
      const last = samples[samples.length - 1]!;
      const missing = Math.round((stretchTo * this.scale) / PTS_HZ) - (base + ticks);
      const fitted = Math.max(1, last.duration + missing);
      ticks += fitted - last.duration;
      last.duration = fitted;
    }
    this.nextDecode = base + ticks;
    if (this.opts.isMaster && this.track.type === 'video') {
      const frame = this.frameTicks(undefined);
      for (const au of aus)
        this.frontier = advanceFrontier(this.frontier, this.ahead, au.pts, frame);
    }
    const size = fragmentSize(samples);
    if (seg.used + size > seg.buf.length) {
      // Parts already stored stay views of the old block (the store holds it for them); the
      // segment moves to a larger one.
      const grown = segmentPool.acquire(Math.max(seg.buf.length * 2, seg.used + size));
      seg.buf.copy(grown.buf, 0, 0, seg.used);
      seg.lease.trim(seg.used);
      seg.lease.release();
      seg.lease = grown;
      seg.buf = grown.buf;
    }
    writeFragment(seg.buf, seg.used, this.fragmentSeq++, samples, base);
    const data = seg.buf.subarray(seg.used, seg.used + size);
    seg.used += size;
    const index = seg.parts++;
    const desc: PartDescriptor = {
      index,
      duration: ticks / this.scale,
      independent: samples[0]!.sync,
      uri: `${seg.b.seq}.${index}.m4s`,
      size: data.length,
    };
    seg.ticks += ticks;
    this.store.addPart(desc, data, seg.lease);
  }

  private finishSegment(nextDts: number, stretchTo?: number): void {
    this.flushPart(nextDts, stretchTo);
    const seg = this.seg!;
    this.seg = undefined;
    if (seg.parts === 0) {
      seg.lease.trim(0);
      seg.lease.release();
      return;
    }
    const data = seg.buf.subarray(0, seg.used);
    // A power of two, so the free blocks of one stream's segments fit each other (ts-writer.ts).
    const want = Math.max(MIN_SEGMENT_RESERVE, seg.used * RESERVE_FACTOR);
    this.reserve = 2 ** Math.ceil(Math.log2(want));
    this.store.commit(
      {
        seq: seg.b.seq,
        discSeq: seg.b.discSeq,
        discontinuity: seg.b.discontinuity,
        start: seg.start,
        timescale: this.scale,
        duration: seg.ticks / this.scale,
        wallclock: seg.b.wallclock,
        uri: `${seg.b.seq}.m4s`,
        size: data.length,
        parts: seg.descs,
        map: seg.map,
      },
      data,
      seg.lease,
    );
    // The store (and whoever it lends the bytes to) holds the block from here, at its size.
    seg.lease.trim(seg.used);
    seg.lease.release();
  }
}

/**
 * Presentation bookkeeping of a video track: `frontier` is the time up to which every frame
 * has been seen, `ahead` holds the times of frames seen beyond it. Adding a frame moves the
 * frontier over every frame that now follows without a gap (half a frame of tolerance).
 */
function advanceFrontier(
  frontier: number | undefined,
  ahead: number[],
  pts: number,
  frame: number,
): number {
  if (frontier === undefined) return pts + frame;
  const tolerance = frame / 2;
  if (pts + frame <= frontier + tolerance) return frontier; // leading picture: shown earlier
  ahead.push(pts);
  let at = frontier;
  for (;;) {
    const i = ahead.findIndex((x) => Math.abs(x - at) <= tolerance);
    if (i < 0) break;
    ahead.splice(i, 1);
    at += frame;
  }
  return at;
}
