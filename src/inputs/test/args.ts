// Builds the ffmpeg argv of the built-in test generator (`test` input) from its record: lavfi
// picture pattern and waveform, drawtext overlay (text + clock), encoder, bitrates, frame rate,
// GOP, size, aspect, programme number and PIDs, `bitrate` padding through -muxrate.
import { existsSync } from 'node:fs';
import { bool, num, str } from '../../config/spec-values.ts';

export const OVERLAY_FONT = '/usr/share/fonts/truetype/dejavu/DejaVuSans.ttf';

/** video-pattern 0..25 → lavfi source (size and rate appended). */
export const VIDEO_PATTERNS: readonly string[] = [
  'testsrc2',
  'smptebars',
  'smptehdbars',
  'pal75bars',
  'pal100bars',
  'testsrc',
  'rgbtestsrc',
  'yuvtestsrc',
  'colorspectrum',
  'colorchart',
  'gradients',
  'mandelbrot',
  'life',
  'cellauto',
  'sierpinski',
  'color=c=black',
  'color=c=white',
  'color=c=red',
  'color=c=green',
  'color=c=blue',
  'color=c=gray',
  'color=c=yellow',
  'color=c=cyan',
  'color=c=magenta',
  'mptestsrc',
  'nullsrc',
];

/** audio-wave 0..12 → lavfi audio source expression; `F` is replaced by the frequency. */
export const AUDIO_WAVES: readonly string[] = [
  "aevalsrc='sin(2*PI*F*t)'", // 0 sine
  "aevalsrc='if(lt(mod(t*F,1),0.5),1,-1)'", // 1 square
  "aevalsrc='4*abs(mod(t*F,1)-0.5)-1'", // 2 triangle
  "aevalsrc='2*mod(t*F,1)-1'", // 3 sawtooth
  "aevalsrc='1-2*mod(t*F,1)'", // 4 inverse sawtooth
  'anoisesrc=color=white', // 5 white noise
  'anoisesrc=color=pink', // 6 pink noise
  'anoisesrc=color=brown', // 7 brown noise
  "aevalsrc='if(lt(mod(t,1),0.06),sin(2*PI*F*t),0)'", // 8 ticks: a short beep each second
  "aevalsrc='0'", // 9 silence
  'sine=frequency=F:beep_factor=2', // 10 tone with a beep each second
  "aevalsrc='sin(2*PI*F*(1+mod(t,4))*t)'", // 11 sweep
  "aevalsrc='0.5*sin(2*PI*F*t)+0.5*sin(2*PI*F*1.5*t)'", // 12 two tones
];

/** PCR interval asked of the muxer, ms (TR 101 290 PCR_repetition limit is 40 ms). */
const PCR_PERIOD_MS = 20;
/** Audio PES payload limit, bytes: six TS packets less the PES header (48 ms of MP2 at 128k). */
const AUDIO_PES_PAYLOAD = 6 * 184 - 14;
/** Mux delay, s: also bounds an audio PES to half of it (100 ms) when frames are small, and
 *  is the PCR lead over DTS (ffmpeg's default is 0.7 s). */
const MUX_DELAY_S = 0.2;
const VIDEO_ENCODERS = ['mpeg2video', 'libx264', 'libx265'] as const;
const AUDIO_ENCODERS = ['mp2', 'aac'] as const;
const AUDIO_RATE = 48000;
const AUDIO_BITRATE = '128k';

/** Escape for a filter option value (level 1) and for the filter graph (level 2). */
const optEscape = (s: string) => s.replace(/[\\':]/g, (c) => '\\' + c);
const graphEscape = (s: string) => s.replace(/[\\',;[\]]/g, (c) => '\\' + c);

/** DejaVu Sans advance width is about 0.6 em or less for Latin text (W, M, %): a line of n
 *  characters at font size s is at most n × 0.6 × s pixels wide. */
const GLYPH_EM = 0.6;
/** Overlay lines keep this share of the picture width (the box border takes the rest). */
const OVERLAY_WIDTH_SHARE = 0.92;
const OVERLAY_MIN_SIZE = 8;

/** Font size of an overlay line: 1/14 of the height, smaller when the line would not fit. */
export function overlayFontSize(width: number, height: number, line: string): number {
  const base = Math.max(12, Math.round(height / 14));
  const fit = Math.floor(
    (width * OVERLAY_WIDTH_SHARE) / (GLYPH_EM * Math.max(1, [...line].length)),
  );
  return Math.max(OVERLAY_MIN_SIZE, Math.min(base, fit));
}

function overlayFilters(cfg: Record<string, unknown>, width: number, height: number): string[] {
  if (!bool(cfg, 'enable-overlay', true) || !existsSync(OVERLAY_FONT)) return [];
  const font = `fontfile=${optEscape(OVERLAY_FONT)}:fontcolor=white:box=1:boxcolor=black@0.6:boxborderw=8`;
  const fmt = str(cfg, 'time-format') || '%H:%M:%S';
  const clock = `%{localtime:${fmt.replace(/[\\:]/g, (c) => '\\' + c)}}`;
  // strftime output is about as long as the format (%H gives two characters), a little longer
  // for some conversions (%Y gives four): count one more per conversion.
  const clockChars = fmt.length + (fmt.match(/%./g)?.length ?? 0);
  const size = overlayFontSize(width, height, 'x'.repeat(clockChars));
  const out = [
    `drawtext=${graphEscape(`${font}:fontsize=${size}:x=(w-tw)/2:y=h-th-${size}:text=${optEscape(clock)}`)}`,
  ];
  const text = str(cfg, 'text-overlay');
  if (text) {
    const tsize = overlayFontSize(width, height, text);
    out.push(
      `drawtext=${graphEscape(`${font}:fontsize=${tsize}:x=(w-tw)/2:y=${tsize}:expansion=none:text=${optEscape(text)}`)}`,
    );
  }
  return out;
}

/** Provider name the generator signals in its SDT. */
export const TEST_PROVIDER = 'sluice';

/** `serviceName` goes into the SDT (ffmpeg would say "Service01" / "FFmpeg"). */
export function testGeneratorArgs(cfg: Record<string, unknown>, serviceName = ''): string[] {
  const width = num(cfg, 'width', 1920);
  const height = num(cfg, 'height', 1080);
  const fps = num(cfg, 'frame-rate', 25);
  const pattern = VIDEO_PATTERNS[num(cfg, 'video-pattern', 0)] ?? VIDEO_PATTERNS[0]!;
  const sep = pattern.includes('=') ? ':' : '=';
  const video = `${pattern}${sep}size=${width}x${height}:rate=${fps}`;
  const freq = num(cfg, 'audio-freq', 440);
  const wave = (AUDIO_WAVES[num(cfg, 'audio-wave', 8)] ?? AUDIO_WAVES[8]!).replace(
    /\bF\b/g,
    String(freq),
  );
  const audioSep = wave.includes('=') ? ':' : '=';
  const audio = `${wave}${audioSep}sample_rate=${AUDIO_RATE}`;
  const vEnc = VIDEO_ENCODERS[num(cfg, 'video-enc', 1)] ?? 'libx264';
  const aEnc = AUDIO_ENCODERS[num(cfg, 'audio-enc', 0)] ?? 'mp2';
  const vKbps = num(cfg, 'video-bitrate', 3000);
  const gop = num(cfg, 'gop-interval', 25);
  const sar = `${num(cfg, 'width-par', 1)}/${num(cfg, 'height-par', 1)}`;
  const vf = [`setsar=${sar}`, ...overlayFilters(cfg, width, height), 'format=yuv420p'].join(',');
  const args = ['-hide_banner', '-loglevel', 'warning', '-nostdin'];
  args.push('-re', '-f', 'lavfi', '-i', video, '-re', '-f', 'lavfi', '-i', audio);
  args.push(
    '-map',
    '0:v',
    '-map',
    '1:a',
    '-vf',
    vf,
    '-af',
    `volume=${num(cfg, 'audio-volume', 0.8)}`,
  );
  args.push(
    '-c:v',
    vEnc,
    '-b:v',
    `${vKbps}k`,
    '-maxrate',
    `${vKbps}k`,
    '-bufsize',
    `${vKbps * 2}k`,
  );
  args.push('-g', String(gop), '-keyint_min', String(gop));
  if (vEnc === 'libx264')
    args.push('-preset', 'veryfast', '-tune', 'zerolatency', '-x264-params', 'scenecut=0');
  if (vEnc === 'libx265')
    args.push('-preset', 'ultrafast', '-x265-params', `scenecut=0:log-level=error`);
  args.push('-c:a', aEnc, '-b:a', AUDIO_BITRATE, '-ac', '2', '-ar', String(AUDIO_RATE));
  const pmtPid = num(cfg, 'pmt-pid', 32);
  const videoPid = num(cfg, 'video-pid', 33);
  const audioPid = num(cfg, 'audio-pid', 34);
  args.push('-streamid', `0:${videoPid}`, '-streamid', `1:${audioPid}`);
  args.push(
    '-mpegts_service_id',
    String(num(cfg, 'pnr', 1)),
    '-mpegts_pmt_start_pid',
    String(pmtPid),
  );
  args.push('-mpegts_start_pid', String(Math.min(videoPid, audioPid)));
  const total = num(cfg, 'bitrate', 0);
  if (total > 0) args.push('-muxrate', `${total}k`);
  // TR 101 290 wants a PCR at least every 40 ms; ffmpeg's default follows the frame rate.
  args.push('-pcr_period', String(PCR_PERIOD_MS));
  if (serviceName) args.push('-metadata', `service_name=${serviceName}`);
  args.push('-metadata', `service_provider=${TEST_PROVIDER}`);
  // Audio PES often enough that arrival jitter never brings two PTS 700 ms apart (PTS_error):
  // ffmpeg gathers audio frames into a PES until 2930 bytes or half its mux delay (0.7 s), so
  // a quiet AAC track carried a PTS only every ~360 ms and arrived up to ~580 ms apart.
  args.push('-pes_payload_size', String(AUDIO_PES_PAYLOAD), '-muxdelay', String(MUX_DELAY_S));
  args.push('-mpegts_flags', '+resend_headers', '-f', 'mpegts', 'pipe:1');
  return args;
}
