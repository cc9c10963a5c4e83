// Elementary stream → access units. Video: one access unit per PES (how broadcast encoders
// and ffmpeg mux), random access detected from the NAL units; audio: the PES split into
// frames with per-frame timestamps. Parameters (SPS, ADTS header …) are captured on the way
// so playlists and init segments describe the actual stream.

import { ac3Entry, mp4a, visualSampleEntry } from './cmaf/sample-entry.ts';
import {
  type AudioParams,
  type ParsedAudio,
  parseAc3,
  parseAdts,
  parseMpegAudio,
} from './codec/audio.ts';
import { leadingNals, splitAnnexB } from './codec/bits.ts';
import {
  avcC,
  h264IsRandomAccess,
  h264NalType,
  NAL_AUD,
  NAL_PPS,
  NAL_SPS,
  parseH264Sps,
  type VideoParams,
} from './codec/h264.ts';
import {
  HEVC_AUD,
  HEVC_PPS,
  HEVC_SPS,
  HEVC_VPS,
  hevcIsRandomAccess,
  hevcNalType,
  hvcC,
  parseHevcSps,
} from './codec/hevc.ts';
import type { EsInfo, EsKind, PictureStart } from './demux/ts.ts';
import { PTS_HZ } from './timeline.ts';

const MPEG2_PICTURE_START = 0x00;
const MPEG2_I_FRAME = 1;
const NAL_LENGTH_BYTES = 4;
/** A partial audio frame longer than this is not a frame (the largest AC-3 frame is 3,840
 *  bytes, ADTS 8,191): it is dropped instead of carried to the next PES. */
const MAX_AUDIO_CARRY = 8192;
/** Sample of an access unit whose payload was not kept (HLS-TS only: no CMAF sample made). */
const NO_SAMPLE = Buffer.alloc(0);
const h264Vcl = (b: number) => {
  const t = b & 0x1f;
  return t >= 1 && t <= 5;
};
/** HEVC NAL types 0–31 are VCL. */
const hevcVcl = (b: number) => ((b >> 1) & 0x3f) < 32;
const mpeg2Picture = (b: number) => b === MPEG2_PICTURE_START;

/** Where the coded picture of a video PES begins (what a head-only PES is kept up to). */
export function pictureStart(kind: EsKind): PictureStart | undefined {
  if (kind === 'h264') return h264Vcl;
  if (kind === 'hevc') return hevcVcl;
  if (kind === 'mpeg2') return mpeg2Picture;
  return undefined;
}

export interface AccessUnit {
  /** Unwrapped 90 kHz timestamps. */
  pts: number;
  dts: number;
  key: boolean;
  /** CMAF sample payload (length-prefixed NAL units for video, raw frame for audio), lent for
   *  the sink's call: it may lie in a buffer the demuxer reuses for the next PES. */
  sample: Buffer;
  /** Audio: PCM samples in the frame. */
  samples?: number;
  packetIndex: number;
}

export type TrackType = 'video' | 'audio' | 'subtitle';

/** What the packager knows about one elementary stream. */
export class Track {
  readonly type: TrackType;
  video?: VideoParams;
  audio?: AudioParams;
  /** stsd sample entry, once parameters are known (CMAF-capable tracks only). */
  sampleEntry?: Buffer;
  /** Observed mean bit rate, bits per second. */
  bitrate = 0;
  private bytes = 0;
  private firstDts = -1;
  private lastDts = -1;
  private frameDeltas: number[] = [];
  private paramSets = new Map<number, Buffer>();
  /** A parameter set differs from the one the sample entry was built from. */
  private paramsDirty = false;
  /** The sample entry was rebuilt from new parameter sets (e.g. a resolution change). */
  private reconfigured = false;
  /** Audio: the start of a frame that continues in the next PES, and its presentation time. */
  private carry?: { data: Buffer; pts: number };

  constructor(readonly es: EsInfo) {
    const k = es.kind;
    this.type =
      k === 'h264' || k === 'hevc' || k === 'mpeg2'
        ? 'video'
        : k === 'teletext' || k === 'dvbsub'
          ? 'subtitle'
          : 'audio';
  }

  get pid(): number {
    return this.es.pid;
  }

  get codec(): string | undefined {
    return this.video?.codec ?? this.audio?.codec;
  }

  /** Frames per second from the observed decode-time steps (VUI fallback). */
  get fps(): number {
    if (this.video?.fps) return this.video.fps;
    const d = [...this.frameDeltas].sort((a, b) => a - b)[this.frameDeltas.length >> 1];
    return d ? PTS_HZ / d : 0;
  }

  get cmafCapable(): boolean {
    return this.es.kind !== 'mpeg2' && this.es.kind !== 'other' && this.type !== 'subtitle';
  }

  /**
   * Turn one PES payload into access units (timestamps already unwrapped). `head`: only the
   * start of a video PES was kept (no CMAF output wants the sample): the key flag and the
   * parameter sets come from the NAL units before the first slice and the sample is empty.
   * H.264/HEVC samples are rewritten to length-prefixed form inside `data` when they fit.
   */
  accessUnits(
    data: Buffer,
    pts: number,
    dts: number,
    packetIndex: number,
    size = data.length,
    head = false,
  ): AccessUnit[] {
    this.account(size, dts);
    switch (this.es.kind) {
      case 'h264':
        return [this.h264(data, pts, dts, packetIndex, head)];
      case 'hevc':
        return [this.hevc(data, pts, dts, packetIndex, head)];
      case 'mpeg2':
        return [{ pts, dts, key: mpeg2IsIFrame(data), sample: data, packetIndex }];
      case 'aac':
        return this.audioFrames(data, parseAdts, pts, packetIndex);
      case 'ac3':
        return this.audioFrames(data, parseAc3, pts, packetIndex);
      case 'mpa':
        return this.audioFrames(data, parseMpegAudio, pts, packetIndex);
      default:
        return [];
    }
  }

  private account(n: number, dts: number): void {
    this.bytes += n;
    if (this.firstDts < 0) this.firstDts = dts;
    if (
      this.type === 'video' &&
      this.lastDts >= 0 &&
      dts > this.lastDts &&
      this.frameDeltas.length < 64
    )
      this.frameDeltas.push(dts - this.lastDts);
    this.lastDts = dts;
    const span = (dts - this.firstDts) / PTS_HZ;
    if (span > 1) this.bitrate = Math.round((this.bytes * 8) / span);
  }

  private h264(
    data: Buffer,
    pts: number,
    dts: number,
    packetIndex: number,
    head: boolean,
  ): AccessUnit {
    const nals = head ? leadingNals(data, h264Vcl) : splitAnnexB(data);
    const key = h264IsRandomAccess(nals);
    // A head makes no sample: only the parameter sets are taken from it.
    const keep: Buffer[] | undefined = head ? undefined : [];
    for (const nal of nals) {
      const t = h264NalType(nal);
      if (t === NAL_SPS || t === NAL_PPS) {
        this.keepParamSet(t, nal);
        continue;
      }
      if (t !== NAL_AUD) keep?.push(nal);
    }
    if (
      (!this.sampleEntry || this.paramsDirty) &&
      this.paramSets.has(NAL_SPS) &&
      this.paramSets.has(NAL_PPS)
    ) {
      const sps = this.paramSets.get(NAL_SPS)!;
      const next = parseH264Sps(sps);
      if (this.rebuildWanted(next)) {
        this.video = next;
        const cfg = avcC([sps], [this.paramSets.get(NAL_PPS)!]);
        this.sampleEntry = visualSampleEntry('avc1', next.width, next.height, cfg);
      }
    }
    return { pts, dts, key, sample: keep ? lengthPrefixed(keep, data) : NO_SAMPLE, packetIndex };
  }

  private hevc(
    data: Buffer,
    pts: number,
    dts: number,
    packetIndex: number,
    head: boolean,
  ): AccessUnit {
    const nals = head ? leadingNals(data, hevcVcl) : splitAnnexB(data);
    const key = hevcIsRandomAccess(nals);
    const keep: Buffer[] | undefined = head ? undefined : [];
    for (const nal of nals) {
      const t = hevcNalType(nal);
      if (t === HEVC_VPS || t === HEVC_SPS || t === HEVC_PPS) {
        this.keepParamSet(t, nal);
        continue;
      }
      if (t !== HEVC_AUD) keep?.push(nal);
    }
    const vps = this.paramSets.get(HEVC_VPS);
    const sps = this.paramSets.get(HEVC_SPS);
    const pps = this.paramSets.get(HEVC_PPS);
    if ((!this.sampleEntry || this.paramsDirty) && vps && sps && pps) {
      const info = parseHevcSps(sps);
      if (this.rebuildWanted(info)) {
        this.video = info;
        this.sampleEntry = visualSampleEntry(
          'hvc1',
          info.width,
          info.height,
          hvcC([vps], [sps], [pps], info),
        );
      }
    }
    return { pts, dts, key, sample: keep ? lengthPrefixed(keep, data) : NO_SAMPLE, packetIndex };
  }

  /** Whether the sample entry changed since the last call (then the caller starts a new
   *  run: a discontinuity and a new init segment). */
  takeReconfigured(): boolean {
    const r = this.reconfigured;
    this.reconfigured = false;
    return r;
  }

  /** Keep a parameter set; a new SPS marks the sample entry for a check (PPS and VPS are
   *  only refreshed: encoders may alternate several PPS without changing anything). */
  private keepParamSet(type: number, nal: Buffer): void {
    const old = this.paramSets.get(type);
    if (old?.equals(nal)) return;
    if (old && (type === NAL_SPS || type === HEVC_SPS)) this.paramsDirty = true;
    // The PPS (and VPS) of a new SPS follow it in the same access unit: taken while dirty.
    if (!old || !this.sampleEntry || this.paramsDirty) this.paramSets.set(type, Buffer.from(nal));
  }

  /** Whether to (re)build the sample entry for these SPS parameters: always the first time;
   *  afterwards when the picture size or codec string changed (a new run, new init). */
  private rebuildWanted(next: VideoParams): boolean {
    this.paramsDirty = false;
    if (!this.sampleEntry) return true;
    const cur = this.video;
    if (cur && cur.width === next.width && cur.height === next.height && cur.codec === next.codec)
      return false;
    this.reconfigured = true;
    return true;
  }

  /** Where the next audio frame starts when a PES carries no timestamp of its own (a PES
   *  holding only the rest of a frame), or undefined. */
  get audioContinuation(): number | undefined {
    return this.carry?.pts;
  }

  /** Forget a partial audio frame (a splice: the rest will never come). */
  resetCarry(): void {
    this.carry = undefined;
  }

  /**
   * Split a PES payload into audio frames. Frames may straddle PES boundaries (broadcast
   * muxers cut PES by size): the incomplete tail is kept and joined with the next PES. A frame
   * starting in the carried bytes keeps the time it was due at; the frames starting in this
   * PES are timed from its PTS (which applies to the first frame that starts in it).
   */
  private audioFrames(
    data: Buffer,
    parse: (b: Buffer) => ParsedAudio,
    pts: number,
    packetIndex: number,
  ): AccessUnit[] {
    const carry = this.carry;
    this.carry = undefined;
    const carried = carry?.data.length ?? 0;
    const buf = carry ? Buffer.concat([carry.data, data]) : data;
    const parsed = parse(buf);
    if (!this.audio && parsed.params) {
      const p = parsed.params;
      this.audio = p;
      if (this.es.kind === 'ac3') this.sampleEntry = ac3Entry(p.channels, p.sampleRate, p.config!);
      else this.sampleEntry = mp4a(p.channels, p.sampleRate, p.oti!, p.config);
    }
    const rate = this.audio?.sampleRate ?? 48000;
    let early = carry?.pts ?? pts;
    let t = pts;
    let first = true;
    const out = parsed.frames.map((f) => {
      const step = (f.samples * PTS_HZ) / rate;
      const inCarry = f.offset < carried;
      const at = inCarry ? early : t;
      if (inCarry) early += step;
      else t += step;
      // Only the first frame that starts in this PES starts at its packet (a TS cut point).
      const starts = !inCarry && first;
      if (starts) first = false;
      return {
        pts: at,
        dts: at,
        key: true,
        sample: f.data,
        samples: f.samples,
        packetIndex: starts ? packetIndex : -1,
      };
    });
    const restLen = buf.length - parsed.rest;
    if (restLen > 0 && restLen <= MAX_AUDIO_CARRY)
      this.carry = { data: Buffer.from(buf.subarray(parsed.rest)), pts: t };
    return out;
  }
}

function lengthPrefixed(nals: Buffer[], data?: Buffer): Buffer {
  if (data && inPlaceFits(nals, data)) {
    let w = 0;
    for (const n of nals) {
      const start = n.byteOffset - data.byteOffset;
      data.writeUInt32BE(n.length, w);
      data.copyWithin(w + NAL_LENGTH_BYTES, start, start + n.length);
      w += NAL_LENGTH_BYTES + n.length;
    }
    return data.subarray(0, w);
  }
  return lengthPrefixedCopy(nals);
}

/** Whether writing the prefixed units from the start of `data` never overtakes unread bytes. */
function inPlaceFits(nals: Buffer[], data: Buffer): boolean {
  let w = 0;
  for (const n of nals) {
    if (n.buffer !== data.buffer) return false;
    const start = n.byteOffset - data.byteOffset;
    if (start < 0 || w + NAL_LENGTH_BYTES > start) return false;
    w += NAL_LENGTH_BYTES + n.length;
  }
  return true;
}

function lengthPrefixedCopy(nals: Buffer[]): Buffer {
  let size = 0;
  for (const n of nals) size += NAL_LENGTH_BYTES + n.length;
  const out = Buffer.allocUnsafe(size);
  let o = 0;
  for (const n of nals) {
    out.writeUInt32BE(n.length, o);
    n.copy(out, o + NAL_LENGTH_BYTES);
    o += NAL_LENGTH_BYTES + n.length;
  }
  return out;
}

/** An MPEG-2 video PES starts an I-frame when its first picture header says so. */
export function mpeg2IsIFrame(data: Buffer): boolean {
  for (let i = 0; i + 5 < data.length; i++) {
    if (
      data[i] === 0 &&
      data[i + 1] === 0 &&
      data[i + 2] === 1 &&
      data[i + 3] === MPEG2_PICTURE_START
    ) {
      return ((data[i + 5]! >> 3) & 7) === MPEG2_I_FRAME;
    }
  }
  return false;
}
