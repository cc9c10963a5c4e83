// Elementary streams → MPEG-TS (ISO/IEC 13818-1): the one muxer of the inputs that receive codec
// frames instead of TS (HLS fMP4 segments, RTMP, RTSP). Pure: frames in, TS packets out to a
// sink in batches of whole packets. Timestamps come from the source clock (the caller's
// timebase, 90 kHz by default), never from arrival time.
//
// - H.264 / HEVC: length-prefixed NAL units (AVCC / hvcC, the decoder configuration record given
//   as `config`) or Annex B (`paramSets` optional); an access unit delimiter opens every access
//   unit and the parameter sets are put in front of key frames that do not carry their own.
// - AAC: raw frames + AudioSpecificConfig (`config`) → ADTS; frames already in ADTS pass as-is.
// - MP2/MP3 (stream_type 0x03), AC-3 (0x81, private stream 1): frames as they are.
// - PAT/PMT at the start and every `psiIntervalMs` of stream time; PCR on the first video track
//   (the first track when there is none) at most `pcrIntervalMs` apart, `pcrDelayMs` before the
//   decoding time; continuity counters per PID; one PES per frame, the last packet padded with
//   adaptation-field stuffing; random_access_indicator on key frames.
// - discontinuity(): the next packet of every PID carries discontinuity_indicator and PAT/PMT
//   and a PCR are sent at once (the source clock jumped, e.g. a reconnect).
import { PAT_PID, SYNC_BYTE, TS_PACKET_SIZE } from './packet.ts';
import { buildPat, buildPmt, DESCRIPTOR_ISO639_LANGUAGE } from './psi.ts';
import {
  STREAM_TYPE_AAC_ADTS,
  STREAM_TYPE_ATSC_AC3,
  STREAM_TYPE_H264,
  STREAM_TYPE_HEVC,
  STREAM_TYPE_MPEG1_AUDIO,
} from './stream-type.ts';

export type EsCodec = 'h264' | 'hevc' | 'aac' | 'mp3' | 'mp2' | 'ac3';

export const ES_CODECS: readonly EsCodec[] = ['h264', 'hevc', 'aac', 'mp3', 'mp2', 'ac3'];

export interface EsTrack {
  codec: EsCodec;
  /** H.264: AVCDecoderConfigurationRecord (avcC), HEVC: HEVCDecoderConfigurationRecord (hvcC):
   *  frames are length-prefixed. Absent: frames are Annex B. AAC: AudioSpecificConfig (absent:
   *  frames must already be ADTS). */
  config?: Uint8Array;
  /** Annex B video: parameter sets (SPS, PPS, VPS; NAL units without start codes) put in front
   *  of key frames that lack them (RTSP's sprop-parameter-sets). */
  paramSets?: Uint8Array[];
  /** Ticks per second of this track's pts/dts; default 90 000. */
  timescale?: number;
  /** PID; default the next free from `firstPid`. */
  pid?: number;
  /** ISO 639-2 language code of an audio track (signalled in the PMT). */
  language?: string;
}

export interface EsFrame {
  /** Presentation time in the track's timescale (any origin, unwrapped). */
  pts: number;
  /** Decoding time; default pts. */
  dts?: number;
  /** One access unit / audio frame (length-prefixed or Annex B, per the track). */
  data: Uint8Array;
  /** A random access point (IDR / IRAP). Audio frames always are. */
  key?: boolean;
}

export interface EsMuxerOptions {
  /** Called with whole packets (a multiple of 188 bytes); the buffer is the sink's to keep
   *  (batches are cut one after another from a larger block whose bytes are never reused),
   *  unless `transient`. */
  sink: (packets: Buffer) => void;
  /** The batch is valid during the sink call only: the muxer writes the next one over it
   *  (one block per muxer for its whole life, no allocation per batch). Default false. */
  transient?: boolean;
  programNumber?: number;
  transportStreamId?: number;
  pmtPid?: number;
  /** PID of the first track without an explicit one; later tracks count up. */
  firstPid?: number;
  psiIntervalMs?: number;
  pcrIntervalMs?: number;
  /** PCR runs this far behind the decoding time (the decoder's buffering). */
  pcrDelayMs?: number;
  /** Packets gathered before the sink is called (flush() hands over fewer). */
  batchPackets?: number;
}

export interface EsMuxerStats {
  frames: number;
  packets: number;
  /** Frames refused (unknown track, malformed length prefixes, no AAC config). */
  dropped: number;
  discontinuities: number;
}

const TS_PAYLOAD = TS_PACKET_SIZE - 4;
const TWO_33 = 2 ** 33;
const TWO_30 = 2 ** 30;
const CLOCK = 90_000;
const H264_AUD = Buffer.from([0, 0, 0, 1, 0x09, 0xf0]);
const HEVC_AUD = Buffer.from([0, 0, 0, 1, 0x46, 0x01, 0x50]);
const START_CODE = Buffer.from([0, 0, 0, 1]);
const H264_NAL_AUD = 9;
const H264_NAL_SPS = 7;
const HEVC_NAL_AUD = 35;
const HEVC_NAL_VPS = 32;
const HEVC_NAL_SPS = 33;
const STREAM_ID_VIDEO = 0xe0;
const STREAM_ID_AUDIO = 0xc0;
const STREAM_ID_PRIVATE_1 = 0xbd;
const MAX_PES_LENGTH = 0xffff;
/** Output batches are cut from blocks of this many batches (at least BLOCK_MIN_BYTES): one
 *  allocation for many batches. */
const BLOCK_BATCHES = 8;
const BLOCK_MIN_BYTES = 128 * 1024;
const EMPTY = Buffer.alloc(0);
/** Room for a frame's PES at first (grown by doubling for a bigger one). */
const SCRATCH_BYTES = 64 * 1024;
/** The typed-array methods, called with .call: looked up on a Buffer (or the arena) in the
 *  optimised muxer they went through a generic property load every packet. */
const fillBytes = Uint8Array.prototype.fill;
const copyBytesWithin = Uint8Array.prototype.copyWithin;
/** A frame bigger than this is refused (no access unit of a real stream is near it). */
export const ES_MAX_FRAME_BYTES = 16 * 1024 * 1024;
/** ADTS sampling_frequency_index table (ISO/IEC 14496-3 1.6.3.4). */
const AAC_RATES = [
  96000, 88200, 64000, 48000, 44100, 32000, 24000, 22050, 16000, 12000, 11025, 8000, 7350,
];

interface TrackState {
  codec: EsCodec;
  video: boolean;
  pid: number;
  streamType: number;
  streamId: number;
  timescale: number;
  language: string;
  cc: number;
  disc: boolean;
  /** Length-prefix size of AVCC/hvcC frames; 0 = Annex B. */
  lengthSize: number;
  /** Parameter sets in Annex B form, put in front of key frames that lack them. */
  paramSets: Buffer;
  /** ADTS header (7 bytes) with the length left to fill; null = frames are ADTS already. */
  adts: Buffer | null;
}

/** ASC → the fixed part of an ADTS header. Throws on a config ADTS cannot carry. */
export function adtsHeaderFromAsc(asc: Uint8Array): Buffer {
  let bit = 0;
  const read = (n: number): number => {
    let v = 0;
    for (let i = 0; i < n; i++, bit++) {
      const byte = asc[bit >> 3];
      if (byte === undefined) throw new Error('AudioSpecificConfig too short');
      v = (v << 1) | ((byte >> (7 - (bit & 7))) & 1);
    }
    return v;
  };
  const objectType = (): number => {
    const t = read(5);
    return t === 31 ? 32 + read(6) : t;
  };
  const freqIndex = (): number => {
    const i = read(4);
    if (i !== 15) return i;
    const idx = AAC_RATES.indexOf(read(24));
    if (idx < 0) throw new Error('AAC sampling rate not expressible in ADTS');
    return idx;
  };
  let aot = objectType();
  const freq = freqIndex();
  const channels = read(4);
  if (aot === 5 || aot === 29) {
    freqIndex(); // SBR/PS extension rate: ADTS carries the core one (implicit signalling)
    aot = objectType();
  }
  if (aot < 1 || aot > 4) throw new Error(`AAC object type ${aot} cannot be carried in ADTS`);
  const h = Buffer.alloc(7);
  h[0] = 0xff;
  h[1] = 0xf1; // MPEG-4, layer 0, no CRC
  h[2] = ((aot - 1) << 6) | (freq << 2) | (channels >> 2);
  h[3] = (channels & 3) << 6;
  h[6] = 0xfc;
  return h;
}

/** Parameter sets of an avcC record, each with a start code. */
function avccParamSets(c: Uint8Array): { lengthSize: number; sets: Buffer } {
  if (c.length < 7) throw new Error('avcC too short');
  const lengthSize = (c[4]! & 3) + 1;
  const parts: Buffer[] = [];
  let o = 5;
  for (let list = 0; list < 2; list++) {
    const n = list === 0 ? c[o]! & 0x1f : c[o]!;
    o++;
    for (let i = 0; i < n; i++) {
      if (o + 2 > c.length) throw new Error('avcC truncated');
      const len = (c[o]! << 8) | c[o + 1]!;
      o += 2;
      if (o + len > c.length) throw new Error('avcC truncated');
      parts.push(START_CODE, Buffer.from(c.subarray(o, o + len)));
      o += len;
    }
    if (o >= c.length) break;
  }
  return { lengthSize, sets: Buffer.concat(parts) };
}

/** Parameter sets (VPS, SPS, PPS, SEI arrays) of an hvcC record, each with a start code. */
function hvccParamSets(c: Uint8Array): { lengthSize: number; sets: Buffer } {
  if (c.length < 23) throw new Error('hvcC too short');
  const lengthSize = (c[21]! & 3) + 1;
  const parts: Buffer[] = [];
  const arrays = c[22]!;
  let o = 23;
  for (let a = 0; a < arrays; a++) {
    if (o + 3 > c.length) throw new Error('hvcC truncated');
    const n = (c[o + 1]! << 8) | c[o + 2]!;
    o += 3;
    for (let i = 0; i < n; i++) {
      if (o + 2 > c.length) throw new Error('hvcC truncated');
      const len = (c[o]! << 8) | c[o + 1]!;
      o += 2;
      if (o + len > c.length) throw new Error('hvcC truncated');
      parts.push(START_CODE, Buffer.from(c.subarray(o, o + len)));
      o += len;
    }
  }
  return { lengthSize, sets: Buffer.concat(parts) };
}

function mod33(v: number): number {
  const r = v % TWO_33;
  return r < 0 ? r + TWO_33 : r;
}

export class EsMuxer {
  private readonly tracks: TrackState[] = [];
  private readonly sink: (packets: Buffer) => void;
  private readonly programNumber: number;
  private readonly tsid: number;
  private readonly pmtPid: number;
  private readonly firstPid: number;
  private readonly psiInterval: number;
  private readonly pcrInterval: number;
  private readonly pcrDelay: number;
  private readonly batchBytes: number;
  private readonly blockBytes: number;
  private readonly transient: boolean;
  /** The block packets are written into: the batch being gathered is out[start…used). */
  private out: Buffer;
  private start = 0;
  private used = 0;
  /** Transient: one memory for the block (at 0) and the scratch (at `scratchAt`), so a packet's
   *  payload moves from the one to the other with copyWithin (no view made per packet). */
  private arena: Uint8Array | null = null;
  private scratchAt = 0;
  private pmtVersion = 0;
  private pat: Buffer | null = null;
  private pmt: Buffer | null = null;
  private patCc = 0;
  private pmtCc = 0;
  private patDisc = false;
  private pmtDisc = false;
  /** Unwrapped 90 kHz times of the last PSI and PCR; NaN = send at the next frame. */
  private lastPsi = Number.NaN;
  private lastPcr = Number.NaN;
  private scratch: Buffer;
  private readonly counters: EsMuxerStats = {
    frames: 0,
    packets: 0,
    dropped: 0,
    discontinuities: 0,
  };

  constructor(opts: EsMuxerOptions) {
    this.sink = opts.sink;
    this.programNumber = opts.programNumber ?? 1;
    this.tsid = opts.transportStreamId ?? 1;
    this.pmtPid = opts.pmtPid ?? 0x1000;
    this.firstPid = opts.firstPid ?? 0x100;
    this.psiInterval = ((opts.psiIntervalMs ?? 100) * CLOCK) / 1000;
    this.pcrInterval = ((opts.pcrIntervalMs ?? 40) * CLOCK) / 1000;
    this.pcrDelay = ((opts.pcrDelayMs ?? 500) * CLOCK) / 1000;
    this.batchBytes = Math.max(1, opts.batchPackets ?? 64) * TS_PACKET_SIZE;
    this.blockBytes =
      this.batchBytes * Math.max(BLOCK_BATCHES, Math.ceil(BLOCK_MIN_BYTES / this.batchBytes));
    this.transient = opts.transient === true;
    this.out = EMPTY;
    if (this.transient) this.scratch = this.newArena(SCRATCH_BYTES);
    else this.scratch = Buffer.allocUnsafe(SCRATCH_BYTES);
  }

  /** Transient: a new arena of one batch and `scratchBytes`, the batch so far carried over;
   *  returns its scratch. */
  private newArena(scratchBytes: number): Buffer {
    const ab = new ArrayBuffer(this.batchBytes + scratchBytes);
    const out = Buffer.from(ab, 0, this.batchBytes);
    this.out.copy(out, 0, 0, this.used);
    this.out = out;
    this.arena = new Uint8Array(ab);
    this.scratchAt = this.batchBytes;
    return Buffer.from(ab, this.batchBytes, scratchBytes);
  }

  /** Add a track; its index is what write() takes. A track added after output started bumps
   *  the PMT version (sent at the next frame). Throws on a decoder config it cannot use. */
  addTrack(t: EsTrack): number {
    const video = t.codec === 'h264' || t.codec === 'hevc';
    const used = new Set(this.tracks.map((x) => x.pid));
    let pid = t.pid ?? this.firstPid;
    if (t.pid === undefined) while (used.has(pid) || pid === this.pmtPid) pid++;
    else if (used.has(pid) || pid === this.pmtPid || pid < 0x10 || pid > 0x1ffe)
      throw new Error(`PID ${pid} is not free`);
    const sameKind = this.tracks.filter((x) => x.video === video).length;
    const s: TrackState = {
      codec: t.codec,
      video,
      pid,
      streamType: streamTypeOf(t.codec),
      streamId:
        t.codec === 'ac3'
          ? STREAM_ID_PRIVATE_1
          : (video ? STREAM_ID_VIDEO : STREAM_ID_AUDIO) + (sameKind & 0x0f),
      timescale: t.timescale && t.timescale > 0 ? t.timescale : CLOCK,
      language: t.language ?? '',
      cc: 0,
      disc: false,
      lengthSize: 0,
      paramSets: Buffer.alloc(0),
      adts: null,
    };
    this.configure(s, t.config, t.paramSets);
    this.tracks.push(s);
    this.tablesChanged();
    return this.tracks.length - 1;
  }

  /** A new decoder configuration for a track (RTMP sends its sequence header again). */
  setConfig(track: number, config: Uint8Array | undefined, paramSets?: Uint8Array[]): void {
    const s = this.tracks[track];
    if (!s) throw new Error(`no track ${track}`);
    this.configure(s, config, paramSets);
  }

  get trackCount(): number {
    return this.tracks.length;
  }

  /** The PID of a track. */
  pidOf(track: number): number {
    return this.tracks[track]?.pid ?? -1;
  }

  private configure(s: TrackState, config?: Uint8Array, paramSets?: Uint8Array[]): void {
    if (s.codec === 'aac') {
      s.adts = config && config.length > 0 ? adtsHeaderFromAsc(config) : null;
      return;
    }
    if (!s.video) return;
    if (config && config.length > 0) {
      const p = s.codec === 'h264' ? avccParamSets(config) : hvccParamSets(config);
      s.lengthSize = p.lengthSize;
      s.paramSets = p.sets;
    } else {
      s.lengthSize = 0;
      s.paramSets = paramSets?.length
        ? Buffer.concat(paramSets.flatMap((n) => [START_CODE, Buffer.from(n)]))
        : Buffer.alloc(0);
    }
  }

  private tablesChanged(): void {
    if (this.pat) this.pmtVersion = (this.pmtVersion + 1) & 0x1f;
    this.pmt = null;
    this.lastPsi = Number.NaN;
  }

  /** The source clock jumped (or the source was reopened): mark every PID, resend PSI and PCR. */
  discontinuity(): void {
    this.counters.discontinuities++;
    this.patDisc = true;
    this.pmtDisc = true;
    for (const s of this.tracks) s.disc = true;
    this.lastPsi = Number.NaN;
    this.lastPcr = Number.NaN;
  }

  stats(): EsMuxerStats {
    return { ...this.counters };
  }

  /** Hand over the packets gathered so far. */
  flush(): void {
    if (this.used === this.start) return;
    const b = this.out.subarray(this.start, this.used);
    this.start = this.used;
    this.sink(b);
    if (this.transient) {
      this.start = 0;
      this.used = 0;
    }
  }

  /** Mux one frame of `track`. Returns false when the frame was refused (counted). */
  write(track: number, f: EsFrame): boolean {
    const s = this.tracks[track];
    if (!s || f.data.length === 0 || f.data.length > ES_MAX_FRAME_BYTES) {
      this.counters.dropped++;
      return false;
    }
    const scale = CLOCK / s.timescale;
    const pts = s.timescale === CLOCK ? f.pts : Math.round(f.pts * scale);
    const dts =
      f.dts === undefined ? pts : s.timescale === CLOCK ? f.dts : Math.round(f.dts * scale);
    const key = s.video ? f.key === true : true;
    const esLen = this.elementary(s, f.data, key);
    if (esLen < 0) {
      this.counters.dropped++;
      return false;
    }
    this.counters.frames++;
    if (!(dts - this.lastPsi < this.psiInterval && dts >= this.lastPsi)) {
      this.writePsi();
      this.lastPsi = dts;
    }
    const pcrTrack = this.pcrTrack();
    const pcrNow = dts - this.pcrDelay;
    let pcr = Number.NaN;
    if (s === pcrTrack) {
      pcr = pcrNow;
      this.lastPcr = pcrNow;
    } else if (
      pcrTrack &&
      // Half the interval: frames of other tracks may come that far apart themselves.
      !(pcrNow - this.lastPcr < this.pcrInterval / 2 && pcrNow >= this.lastPcr)
    ) {
      this.writePcrOnly(pcrTrack, pcrNow);
      this.lastPcr = pcrNow;
    }
    this.writePes(s, pts, dts, esLen, key, pcr);
    if (this.used - this.start + TS_PACKET_SIZE > this.batchBytes) this.flush();
    return true;
  }

  private pcrTrack(): TrackState | undefined {
    return this.tracks.find((t) => t.video) ?? this.tracks[0];
  }

  /** Build the frame's elementary-stream bytes at offset 19 of the scratch (room for the PES
   *  header in front); returns their length or -1 when malformed. */
  private elementary(s: TrackState, data: Uint8Array, key: boolean): number {
    const at = 19;
    if (s.codec === 'aac' && s.adts) {
      const len = data.length + 7;
      this.ensure(at + len);
      const h = this.scratch;
      s.adts.copy(h, at);
      h[at + 3] = (h[at + 3]! & 0xfc) | ((len >> 11) & 3);
      h[at + 4] = (len >> 3) & 0xff;
      h[at + 5] = ((len & 7) << 5) | 0x1f;
      h.set(data, at + 7);
      return len;
    }
    if (!s.video) {
      if (s.codec === 'aac' && !(data[0] === 0xff && (data[1]! & 0xf0) === 0xf0)) return -1;
      this.ensure(at + data.length);
      this.scratch.set(data, at);
      return data.length;
    }
    const hevc = s.codec === 'hevc';
    const aud = hevc ? HEVC_AUD : H264_AUD;
    if (s.lengthSize === 0) {
      // Annex B: find the first NAL and whether the access unit carries its parameter sets.
      const first = nalStart(data, 0);
      if (first < 0) return -1;
      const hasAud = isAud(hevc, data[first]!);
      let hasParams = false;
      if (key && s.paramSets.length > 0) {
        for (let o = first; o >= 0 && !hasParams; o = nalStart(data, o + 1)) {
          hasParams = isParam(hevc, data[o]!);
        }
      }
      const lead = (hasAud ? 0 : aud.length) + (key && !hasParams ? s.paramSets.length : 0);
      this.ensure(at + lead + data.length);
      let o = at;
      if (!hasAud) o += aud.copy(this.scratch, o);
      if (key && !hasParams) o += s.paramSets.copy(this.scratch, o);
      this.scratch.set(data, o);
      return o + data.length - at;
    }
    // Length-prefixed: walk the NAL units once to check them and look for parameter sets.
    const ls = s.lengthSize;
    let size = 0;
    let hasAud = false;
    let hasParams = false;
    let n = 0;
    for (let o = 0; o < data.length; ) {
      if (o + ls > data.length) return -1;
      let len = 0;
      for (let i = 0; i < ls; i++) len = len * 256 + data[o + i]!;
      o += ls;
      if (len === 0) continue;
      if (o + len > data.length) return -1;
      if (n === 0 && isAud(hevc, data[o]!)) hasAud = true;
      if (isParam(hevc, data[o]!)) hasParams = true;
      size += 4 + len;
      n++;
      o += len;
    }
    if (n === 0) return -1;
    const withParams = key && !hasParams;
    const total = (hasAud ? 0 : aud.length) + (withParams ? s.paramSets.length : 0) + size;
    this.ensure(at + total);
    const out = this.scratch;
    let w = at;
    if (!hasAud) w += aud.copy(out, w);
    if (withParams) w += s.paramSets.copy(out, w);
    for (let o = 0; o < data.length; ) {
      let len = 0;
      for (let i = 0; i < ls; i++) len = len * 256 + data[o + i]!;
      o += ls;
      if (len === 0) continue;
      out[w] = 0;
      out[w + 1] = 0;
      out[w + 2] = 0;
      out[w + 3] = 1;
      out.set(data.subarray(o, o + len), w + 4);
      w += 4 + len;
      o += len;
    }
    return total;
  }

  private ensure(n: number): void {
    if (this.scratch.length >= n) return;
    let size = this.scratch.length;
    while (size < n) size *= 2;
    this.scratch = this.transient ? this.newArena(size) : Buffer.allocUnsafe(size);
  }

  /** PES header in front of the elementary bytes at scratch[19…], then TS packets. */
  private writePes(
    s: TrackState,
    pts: number,
    dts: number,
    esLen: number,
    key: boolean,
    /** Unwrapped 90 kHz PCR to carry, NaN for none. */
    pcr: number,
  ): void {
    const withDts = s.video && dts !== pts;
    const hdrData = withDts ? 10 : 5;
    const hdr = 9 + hdrData;
    const start = 19 - hdr;
    const b = this.scratch;
    b[start] = 0;
    b[start + 1] = 0;
    b[start + 2] = 1;
    b[start + 3] = s.streamId;
    const pesLen = 3 + hdrData + esLen;
    const lenField = pesLen > MAX_PES_LENGTH ? 0 : pesLen;
    b[start + 4] = lenField >> 8;
    b[start + 5] = lenField & 0xff;
    b[start + 6] = 0x84; // '10', data_alignment_indicator
    b[start + 7] = withDts ? 0xc0 : 0x80;
    b[start + 8] = hdrData;
    writeTimestamp(b, start + 9, withDts ? 3 : 2, mod33(pts));
    if (withDts) writeTimestamp(b, start + 14, 1, mod33(dts));
    this.packetize(s, start, 19 + esLen, key, pcr);
  }

  private slot(): number {
    if (this.used - this.start + TS_PACKET_SIZE > this.batchBytes) this.flush();
    if (this.used + TS_PACKET_SIZE > this.out.length) {
      this.flush();
      this.out = Buffer.allocUnsafeSlow(this.blockBytes);
      this.start = 0;
      this.used = 0;
    }
    const o = this.used;
    this.used += TS_PACKET_SIZE;
    this.counters.packets++;
    return o;
  }

  /** The PES at scratch[from…end) → TS packets. */
  private packetize(s: TrackState, from: number, end: number, key: boolean, pcr: number): void {
    const src = this.scratch;
    const arena = this.arena;
    const at = this.scratchAt;
    let first = true;
    let o = from;
    while (o < end) {
      const p = this.slot();
      const out = this.out;
      const remaining = end - o;
      // Adaptation field of the first packet: flags (+ PCR); grown into stuffing at the end.
      let afFlags = 0;
      let afMin = 0;
      if (first) {
        if (s.disc) afFlags |= 0x80;
        if (key) afFlags |= 0x40;
        if (!Number.isNaN(pcr)) afFlags |= 0x10;
        if (afFlags) afMin = afFlags & 0x10 ? 8 : 2;
      }
      let afTotal = afMin;
      if (remaining < TS_PAYLOAD - afMin) afTotal = TS_PAYLOAD - remaining;
      const payload = TS_PAYLOAD - afTotal;
      out[p] = SYNC_BYTE;
      out[p + 1] = (first ? 0x40 : 0) | ((s.pid >> 8) & 0x1f);
      out[p + 2] = s.pid & 0xff;
      out[p + 3] = (afTotal > 0 ? 0x30 : 0x10) | s.cc;
      s.cc = (s.cc + 1) & 0x0f;
      if (afTotal > 0) {
        out[p + 4] = afTotal - 1;
        if (afTotal > 1) {
          out[p + 5] = afFlags;
          let a = p + 6;
          if (afFlags & 0x10) a = writePcr(out, a, pcr);
          fillBytes.call(out, 0xff, a, p + 4 + afTotal);
        }
      }
      if (arena) copyBytesWithin.call(arena, p + 4 + afTotal, at + o, at + o + payload);
      else src.copy(out, p + 4 + afTotal, o, o + payload);
      o += payload;
      if (first) s.disc = false;
      first = false;
    }
  }

  private writePcrOnly(s: TrackState, pcr: number): void {
    const p = this.slot();
    const out = this.out;
    out[p] = SYNC_BYTE;
    out[p + 1] = (s.pid >> 8) & 0x1f;
    out[p + 2] = s.pid & 0xff;
    out[p + 3] = 0x20 | ((s.cc - 1) & 0x0f); // no payload: the counter does not advance
    out[p + 4] = TS_PAYLOAD - 1;
    out[p + 5] = 0x10 | (s.disc ? 0x80 : 0);
    const a = writePcr(out, p + 6, pcr);
    fillBytes.call(out, 0xff, a, p + TS_PACKET_SIZE);
    s.disc = false;
  }

  private writePsi(): void {
    if (!this.pat) {
      this.pat = buildPat({
        transportStreamId: this.tsid,
        version: 0,
        currentNext: true,
        programs: [{ programNumber: this.programNumber, pid: this.pmtPid }],
      });
    }
    if (!this.pmt) {
      const pcr = this.pcrTrack();
      this.pmt = buildPmt({
        programNumber: this.programNumber,
        version: this.pmtVersion,
        currentNext: true,
        pcrPid: pcr ? pcr.pid : 0x1fff,
        programInfo: Buffer.alloc(0),
        streams: this.tracks.map((t) => ({
          streamType: t.streamType,
          pid: t.pid,
          descriptors: languageDescriptor(t.language),
        })),
      });
    }
    this.patCc = this.writeSection(PAT_PID, this.pat, this.patCc, this.patDisc);
    this.patDisc = false;
    this.pmtCc = this.writeSection(this.pmtPid, this.pmt, this.pmtCc, this.pmtDisc);
    this.pmtDisc = false;
  }

  private writeSection(pid: number, section: Buffer, cc: number, disc: boolean): number {
    let from = 0;
    let first = true;
    while (from < section.length) {
      const p = this.slot();
      const out = this.out;
      out[p] = SYNC_BYTE;
      out[p + 1] = (first ? 0x40 : 0) | ((pid >> 8) & 0x1f);
      out[p + 2] = pid & 0xff;
      let a = p + 4;
      if (first && disc) {
        out[p + 3] = 0x30 | cc;
        out[a++] = 1;
        out[a++] = 0x80;
      } else out[p + 3] = 0x10 | cc;
      if (first) out[a++] = 0; // pointer_field
      const n = Math.min(section.length - from, p + TS_PACKET_SIZE - a);
      section.copy(out, a, from, from + n);
      fillBytes.call(out, 0xff, a + n, p + TS_PACKET_SIZE);
      from += n;
      cc = (cc + 1) & 0x0f;
      first = false;
    }
    return cc;
  }
}

function streamTypeOf(codec: EsCodec): number {
  switch (codec) {
    case 'h264':
      return STREAM_TYPE_H264;
    case 'hevc':
      return STREAM_TYPE_HEVC;
    case 'aac':
      return STREAM_TYPE_AAC_ADTS;
    case 'ac3':
      return STREAM_TYPE_ATSC_AC3;
    default:
      return STREAM_TYPE_MPEG1_AUDIO;
  }
}

function languageDescriptor(lang: string): Buffer {
  if (!/^[a-zA-Z]{3}$/.test(lang)) return Buffer.alloc(0);
  return Buffer.from([DESCRIPTOR_ISO639_LANGUAGE, 4, ...Buffer.from(lang.toLowerCase()), 0]);
}

/** Whether a NAL unit (its first header byte) is an access unit delimiter. */
function isAud(hevc: boolean, b: number): boolean {
  return hevc ? ((b >> 1) & 0x3f) === HEVC_NAL_AUD : (b & 0x1f) === H264_NAL_AUD;
}

/** Whether a NAL unit is the parameter set that says the access unit carries its own (SPS;
 *  HEVC: VPS or SPS). */
function isParam(hevc: boolean, b: number): boolean {
  if (!hevc) return (b & 0x1f) === H264_NAL_SPS;
  const t = (b >> 1) & 0x3f;
  return t === HEVC_NAL_VPS || t === HEVC_NAL_SPS;
}

/** Offset of the first NAL header byte after a start code at or after `from`, or -1. */
function nalStart(d: Uint8Array, from: number): number {
  for (let i = from; i + 2 < d.length; i++) {
    if (d[i + 2]! > 1) {
      i += 2;
      continue;
    }
    if (d[i] === 0 && d[i + 1] === 0 && d[i + 2] === 1) return i + 3 < d.length ? i + 3 : -1;
  }
  return -1;
}

function writeTimestamp(b: Buffer, o: number, prefix: number, ts: number): void {
  const hi = Math.floor(ts / TWO_30) & 7;
  const lo = ts % TWO_30;
  b[o] = (prefix << 4) | (hi << 1) | 1;
  b[o + 1] = (lo >>> 22) & 0xff;
  b[o + 2] = ((lo >>> 14) & 0xfe) | 1;
  b[o + 3] = (lo >>> 7) & 0xff;
  b[o + 4] = ((lo << 1) & 0xfe) | 1;
}

/** PCR (90 kHz base, extension 0) at `o`; returns the offset after it. */
function writePcr(b: Buffer, o: number, pcr90: number): number {
  const base = mod33(pcr90);
  const hi = Math.floor(base / 2); // 32 bits
  b[o] = hi >>> 24;
  b[o + 1] = (hi >>> 16) & 0xff;
  b[o + 2] = (hi >>> 8) & 0xff;
  b[o + 3] = hi & 0xff;
  b[o + 4] = ((base & 1) << 7) | 0x7e;
  b[o + 5] = 0;
  return o + 6;
}
