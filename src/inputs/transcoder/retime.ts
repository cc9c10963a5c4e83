// One continuous timeline for the encoders of one source: a jump of the source's timestamps
// (a `file` input looping, a failover to an input with other timestamps) is taken out before the
// encoder sees it, by an offset added to every PTS, DTS and PCR from the jump on. The video sets
// the offset exactly (its next picture one frame duration after the previous one), so the
// pictures keep their places on the GOP grid of the PTS line; audio and other PIDs move with it
// (their spacing to the video is the source's). Without this, ffmpeg (`-copyts`) passes the jump
// to x264, whose constant-rate control then undershoots for a while, and encoders started after
// the jump are out of step with those started before it. docs/transcoder.md "Source
// discontinuities".
import type { BusSink, StreamBus } from '../../engine/bus.ts';
import {
  AF_PCR,
  hasAdaptation,
  hasPayload,
  payloadOffset,
  pid as pidOf,
  pusi,
  TS_PACKET_SIZE,
} from '../../mpegts/packet.ts';
import { readPcr, writePcr } from '../../mpegts/pcr.ts';
import {
  isPesStart,
  PES_DTS_OFFSET,
  PES_PTS_DTS_FLAGS,
  PES_PTS_FLAG,
  PES_PTS_OFFSET,
  pesTimestampFlags,
  readTimestamp,
} from '../../mpegts/pes.ts';

/** PTS/DTS wrap at 2^33 ticks of 90 kHz. */
const TS_WRAP = 2 ** 33;
const PCR_TICKS_PER_TS_TICK = 300;
/** A step of a timeline this far (90 kHz ticks: 0.5 s) from where it was expected is a jump. */
export const JUMP_TICKS = 45_000;
/** Bytes of a PES timestamp field. */
const TIMESTAMP_BYTES = 5;
/** stream_id of MPEG video PES (ISO/IEC 13818-1 table 2-22: 1110 xxxx). */
const VIDEO_STREAM_ID_MASK = 0xf0;
const VIDEO_STREAM_ID = 0xe0;

const mod33 = (v: number) => ((v % TS_WRAP) + TS_WRAP) % TS_WRAP;
/** `a − b` on the 33-bit circle, in (−2^32, 2^32]. */
function diff33(a: number, b: number): number {
  const d = mod33(a - b);
  return d > TS_WRAP / 2 ? d - TS_WRAP : d;
}

/** Write a 33-bit timestamp into the 5-byte PES field at `o`, keeping its 4-bit prefix. */
function writeTimestamp(b: Buffer, o: number, ts: number): void {
  const prefix = b[o]! & 0xf0;
  b[o] = prefix | (Math.floor(ts / 2 ** 30) << 1) | 1;
  const mid = Math.floor(ts / 2 ** 15) & 0x7fff;
  b[o + 1] = mid >> 7;
  b[o + 2] = ((mid & 0x7f) << 1) | 1;
  const low = ts & 0x7fff;
  b[o + 3] = low >> 7;
  b[o + 4] = ((low & 0x7f) << 1) | 1;
}

/** A timeline followed for jumps: the last timestamp (after the offset) and its last step. */
interface Track {
  last: number;
  step: number;
}

/**
 * Takes timestamp jumps out of a transport stream, in place. Detection: the video's DTS (PTS
 * when it has none) and the PCR are regular, so a value more than JUMP_TICKS from the previous
 * one plus the previous step is a jump; any other PES (audio, subtitles: irregular intervals) is
 * a jump only when it goes back more than JUMP_TICKS. At a jump the offset changes so the value
 * lands where it was expected; when that was not the video, the video's next PES then sets the
 * offset exactly (a frame duration after its previous picture).
 */
export class Retimer {
  /** Added to every PTS and DTS (×300 to PCRs), 90 kHz ticks, on the 33-bit circle. */
  private offset = 0;
  private readonly pes = new Map<number, Track>();
  private pcr: Track | null = null;
  private videoSnap = false;
  /** Jumps taken out so far. */
  jumps = 0;

  /** Retime the aligned packets of `buf` (N × 188 bytes) in place. */
  packets(buf: Buffer): void {
    for (let o = 0; o + TS_PACKET_SIZE <= buf.length; o += TS_PACKET_SIZE) this.packet(buf, o);
  }

  private packet(b: Buffer, o: number): void {
    const pid = pidOf(b, o);
    const pcr = hasAdaptation(b, o) && (b[o + 5]! & AF_PCR) !== 0 ? readPcr(b, o) : -1;
    // The PES first: a picture's PES and its PCR often share the packet, and the video sets the
    // offset more exactly than the PCR.
    if (pusi(b, o) && hasPayload(b, o)) {
      const p = o + payloadOffset(b, o);
      if (p + PES_PTS_OFFSET <= o + TS_PACKET_SIZE && isPesStart(b, p))
        this.pesHeader(b, p, o + TS_PACKET_SIZE, pid);
    }
    if (pcr >= 0) {
      this.pcrValue(pcr / PCR_TICKS_PER_TS_TICK);
      writePcr(b, o, pcr + this.offset * PCR_TICKS_PER_TS_TICK);
    }
  }

  /** The PES header at `p` (its packet ends at `end`): follow its timeline, add the offset. */
  private pesHeader(b: Buffer, p: number, end: number, pid: number): void {
    const flags = pesTimestampFlags(b, p);
    if ((flags & PES_PTS_FLAG) === 0) return;
    const hasDts = flags === PES_PTS_DTS_FLAGS;
    const fields = (hasDts ? PES_DTS_OFFSET : PES_PTS_OFFSET) + TIMESTAMP_BYTES;
    if (p + fields > end) return; // a header split across packets: left as it is
    const pts = readTimestamp(b, p + PES_PTS_OFFSET);
    const dts = hasDts ? readTimestamp(b, p + PES_DTS_OFFSET) : pts;
    const video = (b[p + 3]! & VIDEO_STREAM_ID_MASK) === VIDEO_STREAM_ID;
    let track = this.pes.get(pid);
    if (!track) {
      track = { last: mod33(dts + this.offset), step: 0 };
      this.pes.set(pid, track);
    } else {
      const at = mod33(dts + this.offset);
      const expected = video ? track.last + track.step : track.last;
      const dev = diff33(at, expected);
      const jump = video ? Math.abs(dev) > JUMP_TICKS : dev < -JUMP_TICKS;
      if (jump || (video && this.videoSnap)) {
        this.offset = mod33(this.offset - dev);
        if (jump) this.jumps++;
        this.videoSnap = !video;
      }
      const now = mod33(dts + this.offset);
      if (!jump) {
        const step = diff33(now, track.last);
        if (step > 0) track.step = step;
      }
      track.last = now;
    }
    if (this.offset === 0) return;
    writeTimestamp(b, p + PES_PTS_OFFSET, mod33(pts + this.offset));
    if (hasDts) writeTimestamp(b, p + PES_DTS_OFFSET, mod33(dts + this.offset));
  }

  /** Follow the PCR's timeline (in 90 kHz ticks); a jump moves the offset until the video's
   *  next PES sets it exactly. */
  private pcrValue(value: number): void {
    const at = mod33(value + this.offset);
    if (!this.pcr) {
      this.pcr = { last: at, step: 0 };
      return;
    }
    const dev = diff33(at, this.pcr.last + this.pcr.step);
    if (Math.abs(dev) > JUMP_TICKS) {
      this.offset = mod33(this.offset - dev);
      this.jumps++;
      this.videoSnap = true;
    } else {
      const step = diff33(at, this.pcr.last);
      if (step > 0) this.pcr.step = step;
    }
    this.pcr.last = mod33(value + this.offset);
  }
}

/** A reader of the retimed packets. `packets` says whether it kept `b` past the call (queued
 *  on a pipe): the block is then its own and the next batch goes into a new one. */
export interface RetimedSink extends Omit<BusSink, 'packets'> {
  packets(b: Buffer): boolean;
}

/** The retimed packets of one source, shared by the transcoders that decode it. */
interface Feed {
  sinks: Set<RetimedSink>;
  retimer: Retimer;
  unsubscribe: () => void;
  /** The block the next batch is copied into, while no sink kept the last one. */
  block: Buffer | null;
}

/**
 * One Retimer per source bus, shared by every transcoder of that source while any is subscribed:
 * renditions of a ladder then see the same timeline (the same offset after the same jumps),
 * whenever each one started, and stay aligned. Keyed by the bus: a recreated source stream has
 * a new bus and starts a new timeline. The packets given to the sinks are a copy, retimed, not
 * to be changed; a sink that keeps them past the call says so (RetimedSink), and otherwise the
 * same block takes the next batch. An encoder that keeps up takes each write at once, so one
 * block serves the whole run: a new buffer per batch (~10 a second) kept V8's collector busy.
 */
const feeds = new WeakMap<StreamBus, Feed>();

export function subscribeRetimed(bus: StreamBus, sink: RetimedSink): () => void {
  let feed = feeds.get(bus);
  if (!feed) {
    const f: Feed = {
      sinks: new Set(),
      retimer: new Retimer(),
      unsubscribe: () => {},
      block: null,
    };
    f.unsubscribe = bus.subscribe({
      // The encoder reads through a pipe and times its output by the source's timestamps.
      acceptsBursts: true,
      packets: (b) => {
        // The bus's bytes are valid during the call only, and are not to be changed.
        if (!f.block || f.block.length < b.length) f.block = Buffer.allocUnsafeSlow(b.length);
        const copy = f.block.subarray(0, b.length);
        b.copy(copy);
        f.retimer.packets(copy);
        let kept = false;
        for (const s of f.sinks) if (s.packets(copy)) kept = true;
        if (kept) f.block = null;
      },
      discontinuity: (reason) => {
        for (const s of f.sinks) s.discontinuity?.(reason);
      },
      end: () => {
        for (const s of f.sinks) s.end?.();
      },
    });
    feeds.set(bus, f);
    feed = f;
  }
  const f = feed;
  f.sinks.add(sink);
  return () => {
    f.sinks.delete(sink);
    if (f.sinks.size > 0 || feeds.get(bus) !== f) return;
    feeds.delete(bus);
    f.unsubscribe();
  };
}

/** Jumps taken out of a source's timeline so far (0 when no transcoder follows it). */
export function retimedJumps(bus: StreamBus): number {
  return feeds.get(bus)?.retimer.jumps ?? 0;
}
