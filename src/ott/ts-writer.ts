// HLS over MPEG-TS: cuts the stream's own packets at segment boundaries (no remux), starts
// every segment with the current PAT and PMT, and stores it under a hash name
// (`seg-<hash>.ts`, spec 3 rule 12) so the archive and the live window share names.
import { createHash, randomBytes } from 'node:crypto';
import { TS_PACKET_SIZE } from '../mpegts/packet.ts';
import { type Lease, segmentPool } from './pool.ts';
import type { Boundary, Segmenter, SegmenterSink } from './segmenter.ts';
import type { SegmentStore } from './store.ts';
import { PTS_HZ } from './timeline.ts';
import type { AccessUnit, Track } from './tracks.ts';

const HASH_HEX_CHARS = 20;
/** Packets kept before the first boundary, so the first segment starts at its keyframe. */
const PREROLL_MAX_BYTES = 16 * 1024 * 1024;
/** An open segment is closed early (as at a splice: the next one is discontinuous) when it
 *  would grow past this many bytes per second of target duration (48 Mbit/s), and never holds
 *  less than PREROLL_MAX_BYTES: input with no key frame (junk, a broken encoder, a flood)
 *  cannot make the packager hold more than one such segment. */
const OPEN_SEGMENT_BYTES_PER_SECOND = 6 * 1024 * 1024;

/** A segment block reserves twice the last segment, at least MIN_RESERVE and at most the
 *  open-segment bound plus the batch that crossed it (RESERVE_SLACK). Reserved address space
 *  costs no memory, but V8 counts it as external memory: 17 MiB a block made it 1.3 GB at five
 *  channels (0.2 GB with size classes), and its collections are scheduled by that figure. */
const MIN_RESERVE = 4 << 20;
const RESERVE_FACTOR = 2;
const RESERVE_SLACK = 1 << 20;

/**
 * A buffer of whole TS packets in a block of the segment pool, reserving more than it will
 * likely hold (address space only: memory follows what is written), so it seldom moves.
 */
class PacketBuffer {
  lease: Lease;
  buf: Buffer;
  length = 0;
  /** Where the stored segment ends: what the block keeps once the writer moves on. */
  keep = 0;

  constructor(reserve: number) {
    this.lease = segmentPool.acquire(reserve);
    this.buf = this.lease.buf;
  }

  append(p: Buffer): void {
    if (this.length + p.length > this.buf.length) {
      // Past the reservation (a segment twice the last one): move to a larger block.
      const next = segmentPool.acquire(Math.max(this.buf.length * 2, this.length + p.length));
      this.buf.copy(next.buf, 0, 0, this.length);
      this.lease.release();
      this.lease = next;
      this.buf = next.buf;
    }
    p.copy(this.buf, this.length);
    this.length += p.length;
  }

  /** The writer is done with this buffer: the pages past the stored segment go back to the
   *  OS now (the store may still hold the segment). */
  dispose(): void {
    this.lease.trim(this.keep);
    this.lease.release();
  }
}

/** Bytes of a segment's head and tail that go into its name. */
const NAME_SAMPLE_BYTES = 2 * TS_PACKET_SIZE;

/**
 * The name hash of a segment: a digest of a per-writer random salt, the segment's place in
 * the stream (sequence, discontinuity sequence, start PTS, length) and a sample of its head and
 * tail. Unique across restarts and streams without hashing every byte: a full content hash
 * cost more CPU than cutting the segment (measured in bench/ott-segment.ts).
 */
export function segmentHash(
  data: Buffer,
  salt: Buffer,
  place: { seq: number; discSeq: number; pts: number },
): string {
  const h = createHash('sha1').update(salt);
  h.update(`${place.seq}/${place.discSeq}/${place.pts}/${data.length}`);
  h.update(data.subarray(0, NAME_SAMPLE_BYTES));
  h.update(data.subarray(Math.max(0, data.length - NAME_SAMPLE_BYTES)));
  return h.digest('hex').slice(0, HASH_HEX_CHARS);
}

export class TsSegmentWriter implements SegmenterSink {
  /** Packets since the open segment started (after a PAT/PMT prefix), or a pre-roll. */
  private buf: PacketBuffer;
  /** Makes this writer's segment names differ from any other run's. */
  private readonly salt = randomBytes(16);
  /** Global index of the first packet after the prefix. */
  private bufFirst = -1;
  private prefix = 0;
  private seg?: { b: Boundary; lastPts: number; sawVideo: boolean };
  private frameTicks = PTS_HZ / 25;

  constructor(
    private segmenter: Segmenter,
    private store: SegmentStore,
  ) {
    this.buf = this.newBuffer();
  }

  /** The last stored segment's size: the next block's reservation follows it. */
  private lastSize = 0;

  private newBuffer(): PacketBuffer {
    const most = this.openSegmentLimit() + RESERVE_SLACK;
    // A power of two: segments of a CBR stream wander around one size, and reservations that
    // followed them into neighbouring size classes would miss the free blocks of the other
    // class (each miss a new block, its pages faulted in).
    const want = Math.max(MIN_RESERVE, this.lastSize * RESERVE_FACTOR);
    return new PacketBuffer(Math.min(most, 2 ** Math.ceil(Math.log2(want))));
  }

  /** Segments closed early because they outgrew the open-segment bound (status). */
  oversizeCuts = 0;

  packets(buf: Buffer, firstIndex: number): void {
    if (!this.seg && this.buf.length >= PREROLL_MAX_BYTES) this.replace(this.newBuffer());
    if (this.seg && this.buf.length + buf.length > this.openSegmentLimit()) {
      // Closed here like an input splice: the segment so far is stored, the demuxer starts
      // over at this batch and the next segment is marked discontinuous.
      this.oversizeCuts++;
      this.segmenter.discontinuity();
    }
    if (this.buf.length === 0) {
      this.bufFirst = firstIndex;
      this.prefix = 0;
    }
    this.buf.append(buf);
  }

  private openSegmentLimit(): number {
    return Math.max(
      PREROLL_MAX_BYTES,
      Math.ceil(this.segmenter.targetDuration * OPEN_SEGMENT_BYTES_PER_SECOND),
    );
  }

  accessUnit(track: Track, au: AccessUnit): void {
    if (!this.seg) return;
    // The closing duration after a splice follows the video; audio runs on past it in the mux.
    if (track.type === 'video') {
      this.seg.sawVideo = true;
      if (au.pts > this.seg.lastPts) this.seg.lastPts = au.pts;
      if (track.fps > 0) this.frameTicks = PTS_HZ / track.fps;
    } else if (!this.seg.sawVideo && au.pts > this.seg.lastPts) {
      this.seg.lastPts = au.pts;
      if (au.samples && track.audio)
        this.frameTicks = (au.samples * PTS_HZ) / track.audio.sampleRate;
    }
  }

  boundary(b: Boundary): void {
    const rest = this.seg ? this.commit(b.packetIndex, b.pts) : this.tail(b.packetIndex);
    const next = this.newBuffer();
    // The latest PAT and PMT (the packet that started each section) prefix every segment.
    const { patPacket, pmtPacket } = this.segmenter.demux;
    if (patPacket) next.append(patPacket);
    if (pmtPacket) next.append(pmtPacket);
    this.prefix = next.length;
    next.append(rest);
    this.replace(next);
    this.bufFirst = b.packetIndex;
    this.seg = { b, lastPts: b.pts, sawVideo: false };
  }

  splice(packetIndex: number): void {
    if (!this.seg) return;
    const rest = this.commit(packetIndex, this.seg.lastPts + this.frameTicks);
    this.seg = undefined;
    const next = this.newBuffer();
    next.append(rest);
    this.replace(next);
    this.bufFirst = packetIndex;
    this.prefix = 0;
  }

  /** Move on to `next`; the old buffer goes back to the pool once the store lets go too. */
  private replace(next: PacketBuffer): void {
    this.buf.dispose();
    this.buf = next;
  }

  /** Byte offset in `buf` of global packet `index` (clamped to what is held). */
  private offsetOf(index: number): number {
    const held = (this.buf.length - this.prefix) / TS_PACKET_SIZE;
    const n = Math.max(0, Math.min(held, index - this.bufFirst));
    return this.prefix + n * TS_PACKET_SIZE;
  }

  private tail(index: number): Buffer {
    return this.buf.buf.subarray(this.offsetOf(index), this.buf.length);
  }

  /** Store the open segment up to packet `index`; returns the bytes after it. */
  private commit(index: number, endPts: number): Buffer {
    const seg = this.seg!;
    const cut = this.offsetOf(index);
    // The segment keeps the buffer it was gathered in (no copy); the caller moves on to a new
    // buffer, so these bytes are never written again.
    const body = this.buf.buf.subarray(0, cut);
    this.buf.keep = cut;
    this.lastSize = cut;
    this.store.commit(
      {
        seq: seg.b.seq,
        discSeq: seg.b.discSeq,
        discontinuity: seg.b.discontinuity,
        start: seg.b.pts,
        timescale: PTS_HZ,
        duration: Math.max(0, endPts - seg.b.pts) / PTS_HZ,
        wallclock: seg.b.wallclock,
        uri: `seg-${segmentHash(body, this.salt, { seq: seg.b.seq, discSeq: seg.b.discSeq, pts: seg.b.pts })}.ts`,
        size: body.length,
        parts: [],
      },
      body,
      this.buf.lease,
    );
    return this.buf.buf.subarray(cut, this.buf.length);
  }
}
