// Builds the encoder's argv (Debian's ffmpeg) of a `transcoder` input from its record and what
// the source programme carries (its PMT): MPEG-TS in on stdin, MPEG-TS out on stdout, progress
// on fd 3. Every enc-* field and its option is in docs/transcoder.md; keep the two together.
import { encoderFamily, parseEncOpt } from '../../config/enc-opt.ts';
import { num, str } from '../../config/spec-values.ts';

/** Audio codecs the rules name (enc-aud-rule-<codec>); `other` tracks are copied. */
export type AudioCodec = 'mpeg' | 'aac' | 'ac3' | 'other';

/** What the source programme carries, read from its PAT and PMT. */
export interface SourceProgramme {
  programNumber: number;
  pmtPid: number;
  /** PID of the (first) video stream; undefined when none is listed. */
  videoPid?: number;
  audio: { pid: number; codec: AudioCodec }[];
  /** DVB subtitle and teletext PIDs, copied. */
  subtitles: number[];
}

export const VIDEO_ENCODERS = ['mpeg2video', 'libx264', 'libx265'] as const;

/** enc-speed-preset 1..7 → x264/x265 preset (1 slowest and best, 7 fastest). */
export const SPEED_PRESETS: readonly string[] = [
  'veryslow',
  'slow',
  'medium',
  'fast',
  'veryfast',
  'superfast',
  'ultrafast',
];

/** enc-speed-preset 1..7 → mpeg2video macroblock decision (it has no presets). */
const MPEG2_MBD = ['rd', 'rd', 'rd', 'bits', 'bits', 'simple', 'simple'];

/** enc-resize presets: the scale filter's target (DAR is kept: scale adjusts the SAR). */
export const RESIZE_PRESETS: Readonly<Record<string, string>> = {
  '2': 'scale=trunc(iw/4)*2:trunc(ih/4)*2',
  '4': 'scale=trunc(iw/8)*2:trunc(ih/8)*2',
  sd: 'scale=720:576',
  'sd-pal': 'scale=720:576',
  'sd-ntsc': 'scale=720:480',
  'SD->HD': 'scale=1920:1080',
};

/** The audio encoder of a rule's target codec. */
const AUDIO_ENCODERS: Readonly<Record<string, string>> = { mpeg: 'mp2', aac: 'aac', ac3: 'ac3' };

/** PCR interval asked of the muxer, ms (TR 101 290's PCR_repetition limit is 40 ms). */
const PCR_PERIOD_MS = 20;
const TICKS_PER_SECOND = 90_000;
/** How long the encoder analyses its input before it starts, µs, and at most how many bytes. */
export const ANALYZE_US = 2_000_000;
const PROBE_BYTES = 5_000_000;
/** Constant mode: VBV buffer of one second at the rate; variable modes: cap is 1.5× average. */
const VBR_CAP = 1.5;
const MAX_TO_AVERAGE = 2 / 3;
/** ffmpeg's output I/O buffer (libavformat's IO_BUFFER_SIZE), bytes. */
const AVIO_BUFFER_BYTES = 32_768;
/** The longest the encoder's output may wait in that buffer, ms, when it is written whole. */
const MAX_BUFFER_DELAY_MS = 250;
/**
 * At a constant output rate of at least this (kbit/s: bits per ms), ffmpeg's buffer fills within
 * MAX_BUFFER_DELAY_MS, so the output is written in whole buffers (`-flush_packets 0`) rather
 * than one write per muxed packet (a video frame, an audio PES, a table: ~70 a second at
 * 2 Mbit/s, each a wake-up of sluice's event loop, a pass through the stream engine and an
 * HTTP-TS write; ~8 a second in 32 KiB writes). Below it, or at a variable rate (a still picture
 * may take a tenth of the target), every packet is flushed as it is muxed.
 */
export const BUFFERED_OUTPUT_MIN_KBPS = Math.ceil((AVIO_BUFFER_BYTES * 8) / MAX_BUFFER_DELAY_MS);

/** The scale filter asked by enc-resize, or by enc-width / enc-height; '' for none. */
export function resizeFilter(cfg: Record<string, unknown>): string {
  const preset = str(cfg, 'enc-resize');
  if (preset !== '' && preset !== '0' && preset !== '1') return RESIZE_PRESETS[preset] ?? '';
  const w = num(cfg, 'enc-width', 0);
  const h = num(cfg, 'enc-height', 0);
  if (w === 0 && h === 0) return '';
  return `scale=${w || -2}:${h || -2}`;
}

/** framerate-resample → how many source frames make one encoded frame. */
export function frameStep(cfg: Record<string, unknown>): number {
  const resample = num(cfg, 'framerate-resample', 0);
  return resample === 1 ? 2 : resample === 2 ? 4 : 1;
}

/**
 * The select filter that makes the encoder start on the GOP grid of the source's timestamps:
 * frames are dropped until the first one that opens a cell of `frames` source frames on the
 * PTS line (origin PTS 0), then all pass. The cell is `frames` times the frame duration, read
 * from the first two frames' timestamps (t − prev_t); half a frame of slack keeps a frame that
 * sits exactly on a boundary in its cell despite rounding. So every encoder of one source, begun
 * at any moment, starts on the same frame of a cell and, counting `-g` frames from there, puts
 * its key frames on the same source frames (docs/transcoder.md "Adaptive ladders").
 */
export function gridStartFilter(frames: number): string {
  const d = '(t-prev_t)';
  const cell = `(${frames}*${d})`;
  const opens = `gt(floor((t+${d}/2)/${cell}),floor((prev_t+${d}/2)/${cell}))`;
  return `select='if(isnan(prev_selected_t),${opens},1)'`;
}

/** The video filter chain: start on the GOP grid, deinterlace (frames marked interlaced only),
 *  frame-rate resample, resize, 4:2:0. */
export function videoFilters(cfg: Record<string, unknown>): string {
  const step = frameStep(cfg);
  const f: string[] = [gridStartFilter(num(cfg, 'enc-gop-interval', 25) * step)];
  if (cfg['enc-deinterlace'] !== false)
    f.push('yadif=mode=send_frame:parity=auto:deint=interlaced');
  if (step > 1) f.push(`framestep=${step}`);
  const scale = resizeFilter(cfg);
  if (scale) f.push(scale);
  f.push('format=yuv420p');
  return f.join(',');
}

/** Rate control of the video encoder: kbit/s target, cap and VBV buffer by the mode. */
export function rateControl(cfg: Record<string, unknown>): {
  average: number;
  max: number;
  buffer: number;
  constant: boolean;
} {
  const x = num(cfg, 'enc-video-bitrate', 5000);
  const mode = num(cfg, 'enc-video-bitrate-mode', 0);
  if (mode === 1) {
    const max = Math.round(x * VBR_CAP);
    return { average: x, max, buffer: max, constant: false };
  }
  if (mode === 2)
    return { average: Math.round(x * MAX_TO_AVERAGE), max: x, buffer: x, constant: false };
  return { average: x, max: x, buffer: x, constant: true };
}

export function transcoderArgs(
  cfg: Record<string, unknown>,
  src: SourceProgramme,
  serviceName = '',
): string[] {
  const encType = num(cfg, 'enc-type', 1);
  const family = encoderFamily(encType);
  const encoder = VIDEO_ENCODERS[encType] ?? 'libx264';
  const speed = Math.min(7, Math.max(1, num(cfg, 'enc-speed-preset', 4)));
  const gop = num(cfg, 'enc-gop-interval', 25);
  const bframes = num(cfg, 'enc-bframe', -1);
  const lookahead = num(cfg, 'enc-lookahead', 0);
  const rc = rateControl(cfg);
  const opt = parseEncOpt(str(cfg, 'enc-opt'), family);
  const extra = 'pairs' in opt ? opt.pairs : [];

  const args = ['-hide_banner', '-loglevel', 'warning', '-nostdin', '-nostats'];
  args.push('-progress', 'pipe:3', '-stats_period', '1');
  // The input is live: probe it for ANALYZE_US (ffmpeg's 5 s default is 5 s of delay added to
  // the output, for good), enough for the codec parameters and one key frame of a usual GOP.
  args.push('-analyzeduration', String(ANALYZE_US), '-probesize', String(PROBE_BYTES));
  args.push('-fflags', '+genpts+discardcorrupt', '-f', 'mpegts', '-i', 'pipe:0');
  // The source's timestamps are kept (no shift to zero, no mux delay added) and every frame is
  // encoded once (no drop or duplication to a constant rate): renditions of one source carry
  // the same PTS for the same picture, whenever each encoder started.
  args.push('-copyts', '-fps_mode', 'passthrough');

  // Video: the source's video stream, by PID; its PID is kept.
  let out = 0;
  const streamIds: string[] = [];
  if (src.videoPid !== undefined) {
    args.push('-map', `0:i:${src.videoPid}`);
    streamIds.push('-streamid', `${out}:${src.videoPid}`);
  } else args.push('-map', '0:v:0?');
  out++;
  args.push('-vf', videoFilters(cfg), '-c:v', encoder);
  if (encoder === 'libx264')
    args.push('-profile:v', num(cfg, 'enc-video-profile', 1) === 0 ? 'main' : 'high');
  if (encoder === 'libx265') args.push('-profile:v', 'main');
  if (family === 'mpeg2') args.push('-mbd', MPEG2_MBD[speed - 1]!);
  else args.push('-preset', SPEED_PRESETS[speed - 1]!);
  args.push('-b:v', `${rc.average}k`, '-maxrate', `${rc.max}k`, '-bufsize', `${rc.buffer}k`);
  if (rc.constant && family === 'mpeg2') args.push('-minrate', `${rc.max}k`);
  // Aligned GOPs: a key frame every `gop` frames exactly (no scene-cut key frames, closed GOP),
  // counted from the first frame, which the grid-start filter puts on a cell of the PTS line.
  args.push('-g', String(gop), '-keyint_min', String(gop), '-sc_threshold', '0');
  if (family === 'mpeg2') args.push('-flags', '+cgop');
  if (bframes >= 0) args.push('-bf', String(bframes));
  if (family === 'x264') args.push('-rc-lookahead', String(lookahead));
  const params: string[] = [];
  if (family === 'x264') {
    params.push('scenecut=0');
    if (rc.constant) params.push('nal-hrd=cbr');
  }
  if (family === 'x265') {
    params.push('scenecut=0', `min-keyint=${gop}`, 'open-gop=0', 'log-level=error');
    if (lookahead > 0) params.push(`rc-lookahead=${lookahead}`);
    if (rc.constant) params.push('strict-cbr=1');
  }
  if (family === 'mpeg2') for (const p of extra) args.push(`-${p.key}`, p.value);
  else params.push(...extra.map((p) => `${p.key}=${p.value}`));
  if (params.length) args.push(`-${family}-params`, params.join(':'));

  // Audio, by the rule of each track's codec: dropped, copied (same codec), or encoded.
  const audBitrate = num(cfg, 'enc-aud-bitrate', 128);
  const gain = num(cfg, 'enc-aud-volume-51', 1.6);
  let a = 0;
  for (const track of src.audio) {
    // The schema's default rule of each codec is the codec itself (kept).
    const rule =
      track.codec === 'other' ? 'copy' : str(cfg, `enc-aud-rule-${track.codec}`, track.codec);
    if (rule === '' || rule === 'skip') continue;
    args.push('-map', `0:i:${track.pid}`);
    streamIds.push('-streamid', `${out}:${track.pid}`);
    out++;
    if (rule === 'copy' || rule === track.codec) {
      args.push(`-c:a:${a}`, 'copy');
    } else {
      args.push(`-c:a:${a}`, AUDIO_ENCODERS[rule]!, `-b:a:${a}`, `${audBitrate}k`);
      // MPEG audio and AAC come out stereo; a multichannel (5.1) source is downmixed with the
      // gain (rematrix volume applies only when channels are mixed down). AC-3 keeps its layout.
      if (rule !== 'ac3') args.push(`-filter:a:${a}`, `aresample=ochl=stereo:rmvol=${gain}`);
    }
    a++;
  }
  for (const pid of src.subtitles) {
    args.push('-map', `0:i:${pid}`);
    streamIds.push('-streamid', `${out}:${pid}`);
    out++;
  }
  if (src.subtitles.length) args.push('-c:s', 'copy');

  args.push(...streamIds);
  const pmtPid = num(cfg, 'enc-pmt-pid', 0) || src.pmtPid;
  args.push(
    '-mpegts_service_id',
    String(src.programNumber),
    '-mpegts_pmt_start_pid',
    String(pmtPid),
  );
  const tables = num(cfg, 'patpmt-interval', 9000) / TICKS_PER_SECOND;
  args.push('-pat_period', String(tables), '-pcr_period', String(PCR_PERIOD_MS));
  const total = num(cfg, 'enc-bitrate', 0);
  if (total > 0) args.push('-muxrate', `${total}k`);
  if (serviceName) args.push('-metadata', `service_name=${serviceName}`);
  args.push('-muxdelay', '0', '-muxpreload', '0', '-avoid_negative_ts', 'disabled');
  // The least rate the output keeps: the multiplex's when padded, else the video's when constant.
  const floorKbps = total > 0 ? total : rc.constant ? rc.average : 0;
  if (floorKbps >= BUFFERED_OUTPUT_MIN_KBPS) args.push('-flush_packets', '0');
  args.push('-f', 'mpegts', 'pipe:1');
  return args;
}
