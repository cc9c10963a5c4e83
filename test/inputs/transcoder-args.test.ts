// The transcoder's encoder argv: every enc-* field of spec 1 and the option it becomes
// (docs/transcoder.md), enc-opt's allow-list, the source programme's PIDs and audio rules.
import t from 'tap';
import { parseEncOpt } from '../../src/config/enc-opt.ts';
import {
  BUFFERED_OUTPUT_MIN_KBPS,
  gridStartFilter,
  type SourceProgramme,
  transcoderArgs,
} from '../../src/inputs/transcoder/args.ts';
import { LineRateLimit, parseProgress } from '../../src/inputs/transcoder/input.ts';
import { classify, programmeOf } from '../../src/inputs/transcoder/probe.ts';
import { buildPmt } from '../../src/mpegts/psi.ts';

const SRC: SourceProgramme = {
  programNumber: 7,
  pmtPid: 256,
  videoPid: 257,
  audio: [
    { pid: 258, codec: 'mpeg' },
    { pid: 259, codec: 'aac' },
    { pid: 260, codec: 'ac3' },
  ],
  subtitles: [],
};

/** The value after `opt` (the first occurrence), or undefined. */
function after(args: string[], opt: string): string | undefined {
  const i = args.indexOf(opt);
  return i < 0 ? undefined : args[i + 1];
}

const defaults = transcoderArgs({}, SRC);

t.test('defaults: H.264 High, constant 5000k, GOP 25, preset fast, pipes', async (t) => {
  t.equal(after(defaults, '-i'), 'pipe:0');
  t.equal(defaults.at(-1), 'pipe:1');
  t.equal(after(defaults, '-progress'), 'pipe:3');
  t.equal(after(defaults, '-c:v'), 'libx264');
  t.equal(after(defaults, '-profile:v'), 'high');
  t.equal(after(defaults, '-preset'), 'fast');
  t.equal(after(defaults, '-b:v'), '5000k');
  t.equal(after(defaults, '-maxrate'), '5000k');
  t.equal(after(defaults, '-bufsize'), '5000k');
  t.equal(after(defaults, '-g'), '25');
  t.equal(after(defaults, '-keyint_min'), '25');
  t.equal(after(defaults, '-sc_threshold'), '0');
  t.notOk(defaults.includes('-bf'), 'enc-bframe -1: encoder default');
  t.equal(after(defaults, '-rc-lookahead'), '0', 'enc-lookahead 0: off');
  t.equal(after(defaults, '-x264-params'), 'scenecut=0:nal-hrd=cbr');
  t.equal(
    after(defaults, '-vf'),
    `${gridStartFilter(25)},yadif=mode=send_frame:parity=auto:deint=interlaced,format=yuv420p`,
  );
  t.equal(after(defaults, '-mpegts_service_id'), '7', 'programme number kept');
  t.equal(after(defaults, '-mpegts_pmt_start_pid'), '256', 'enc-pmt-pid 0: source PMT PID');
  t.equal(after(defaults, '-pat_period'), '0.1', 'patpmt-interval 9000 ticks');
  t.notOk(defaults.includes('-muxrate'), 'enc-bitrate 0: no padding');
  t.notOk(
    defaults.some((a) => a.includes('/') && !a.startsWith("select='")),
    'no path anywhere (the grid-start expression divides)',
  );
});

t.test('enc-type and enc-video-profile', async (t) => {
  t.equal(after(transcoderArgs({ 'enc-video-profile': 0 }, SRC), '-profile:v'), 'main');
  const hevc = transcoderArgs({ 'enc-type': 2, 'enc-lookahead': 20 }, SRC);
  t.equal(after(hevc, '-c:v'), 'libx265');
  t.equal(after(hevc, '-profile:v'), 'main');
  t.equal(
    after(hevc, '-x265-params'),
    'scenecut=0:min-keyint=25:open-gop=0:log-level=error:rc-lookahead=20:strict-cbr=1',
  );
  const m2 = transcoderArgs({ 'enc-type': 0, 'enc-speed-preset': 1 }, SRC);
  t.equal(after(m2, '-c:v'), 'mpeg2video');
  t.notOk(m2.includes('-profile:v'));
  t.notOk(m2.includes('-preset'), 'mpeg2video has no presets');
  t.equal(after(m2, '-mbd'), 'rd');
  t.equal(after(m2, '-minrate'), '5000k', 'constant MPEG-2: minrate = maxrate');
  t.equal(after(m2, '-flags'), '+cgop');
});

t.test('the three bitrate modes', async (t) => {
  const mode = (m: number) =>
    transcoderArgs({ 'enc-video-bitrate': 3000, 'enc-video-bitrate-mode': m }, SRC);
  const [c, v1, v2] = [mode(0), mode(1), mode(2)];
  t.same(
    [after(c, '-b:v'), after(c, '-maxrate'), after(c, '-bufsize')],
    ['3000k', '3000k', '3000k'],
  );
  t.same(
    [after(v1, '-b:v'), after(v1, '-maxrate'), after(v1, '-bufsize')],
    ['3000k', '4500k', '4500k'],
  );
  t.same(
    [after(v2, '-b:v'), after(v2, '-maxrate'), after(v2, '-bufsize')],
    ['2000k', '3000k', '3000k'],
  );
  t.equal(after(v1, '-x264-params'), 'scenecut=0', 'variable: no CBR filler');
});

t.test('enc-speed-preset 1..7', async (t) => {
  const presets = [1, 2, 3, 4, 5, 6, 7].map((p) =>
    after(transcoderArgs({ 'enc-speed-preset': p }, SRC), '-preset'),
  );
  t.same(presets, ['veryslow', 'slow', 'medium', 'fast', 'veryfast', 'superfast', 'ultrafast']);
});

t.test('GOP, B-frames, look-ahead', async (t) => {
  const a = transcoderArgs({ 'enc-gop-interval': 50, 'enc-bframe': 3, 'enc-lookahead': 10 }, SRC);
  t.equal(after(a, '-g'), '50');
  t.equal(after(a, '-keyint_min'), '50');
  t.equal(after(a, '-bf'), '3');
  t.equal(after(a, '-rc-lookahead'), '10');
  t.equal(after(transcoderArgs({ 'enc-bframe': 0 }, SRC), '-bf'), '0', '0 = disabled');
});

t.test('aligned renditions: source timestamps kept, start on the GOP grid', async (t) => {
  const i = defaults.indexOf('-i');
  t.ok(defaults.indexOf('-copyts') > 0, '-copyts: no shift to zero');
  t.equal(after(defaults, '-fps_mode'), 'passthrough', 'no frame dropped or duplicated');
  t.ok(defaults.indexOf('-fps_mode') > i, '-fps_mode is an output option');
  t.equal(after(defaults, '-muxdelay'), '0', 'no mux delay added to the PTS');
  t.equal(after(defaults, '-muxpreload'), '0');
  t.equal(after(defaults, '-avoid_negative_ts'), 'disabled');
  t.equal(
    gridStartFilter(10),
    "select='if(isnan(prev_selected_t),gt(floor((t+(t-prev_t)/2)/(10*(t-prev_t))),floor((prev_t+(t-prev_t)/2)/(10*(t-prev_t)))),1)'",
  );
  const vf = (cfg: Record<string, unknown>) => after(transcoderArgs(cfg, SRC), '-vf') ?? '';
  t.ok(vf({ 'enc-gop-interval': 50 }).startsWith(`${gridStartFilter(50)},`), 'first in -vf');
  t.ok(
    vf({ 'enc-gop-interval': 50, 'framerate-resample': 1 }).startsWith(`${gridStartFilter(100)},`),
    'framestep 2: the cell is 2 × GOP source frames',
  );
  t.ok(
    vf({ 'enc-gop-interval': 10, 'framerate-resample': 2 }).startsWith(`${gridStartFilter(40)},`),
    'framestep 4',
  );
});

t.test('deinterlace, frame-rate resample, resize', async (t) => {
  // The filters after the grid-start select (tested above).
  const vf = (cfg: Record<string, unknown>) =>
    after(transcoderArgs(cfg, SRC), '-vf')?.replace(/^select='[^']*',/, '');
  t.equal(vf({ 'enc-deinterlace': false }), 'format=yuv420p');
  t.match(vf({ 'framerate-resample': 1 }), /,framestep=2,/);
  t.match(vf({ 'framerate-resample': 2 }), /,framestep=4,/);
  const resize: [string, string][] = [
    ['2', 'scale=trunc(iw/4)*2:trunc(ih/4)*2'],
    ['4', 'scale=trunc(iw/8)*2:trunc(ih/8)*2'],
    ['sd', 'scale=720:576'],
    ['sd-pal', 'scale=720:576'],
    ['sd-ntsc', 'scale=720:480'],
    ['SD->HD', 'scale=1920:1080'],
  ];
  for (const [preset, scale] of resize) {
    t.equal(
      vf({ 'enc-deinterlace': false, 'enc-resize': preset, 'enc-width': 640, 'enc-height': 360 }),
      `${scale},format=yuv420p`,
      `enc-resize ${preset} overrides width and height`,
    );
  }
  for (const none of ['', '0', '1']) {
    t.equal(
      vf({ 'enc-deinterlace': false, 'enc-resize': none }),
      'format=yuv420p',
      `"${none}": none`,
    );
  }
  t.equal(
    vf({ 'enc-deinterlace': false, 'enc-width': 1280, 'enc-height': 720 }),
    'scale=1280:720,format=yuv420p',
  );
  t.equal(vf({ 'enc-deinterlace': false, 'enc-height': 720 }), 'scale=-2:720,format=yuv420p');
  t.equal(vf({ 'enc-deinterlace': false, 'enc-width': 640 }), 'scale=640:-2,format=yuv420p');
});

t.test('audio rules per source codec, bitrate, 5.1 gain', async (t) => {
  // Defaults: every track keeps its codec (copied).
  t.same(
    [after(defaults, '-c:a:0'), after(defaults, '-c:a:1'), after(defaults, '-c:a:2')],
    ['copy', 'copy', 'copy'],
  );
  const a = transcoderArgs(
    {
      'enc-aud-rule-mpeg': 'aac',
      'enc-aud-rule-aac': 'skip',
      'enc-aud-rule-ac3': 'mpeg',
      'enc-aud-bitrate': 96,
      'enc-aud-volume-51': 2,
    },
    SRC,
  );
  t.notOk(a.includes('0:i:259'), 'the AAC track (skip) is not mapped');
  t.equal(after(a, '-c:a:0'), 'aac', 'MPEG → AAC');
  t.equal(after(a, '-b:a:0'), '96k');
  t.equal(after(a, '-filter:a:0'), 'aresample=ochl=stereo:rmvol=2');
  t.equal(after(a, '-c:a:1'), 'mp2', 'AC-3 → MPEG audio, second output track');
  t.notOk(transcoderArgs({ 'enc-aud-rule-mpeg': '' }, SRC).includes('0:i:258'), 'empty = drop');
  const ac3 = transcoderArgs({ 'enc-aud-rule-mpeg': 'ac3' }, SRC);
  t.equal(after(ac3, '-c:a:0'), 'ac3');
  t.notOk(ac3.includes('-filter:a:0'), 'AC-3 keeps its channel layout');
  const other = transcoderArgs({}, { ...SRC, audio: [{ pid: 300, codec: 'other' }] });
  t.equal(after(other, '-c:a:0'), 'copy', 'E-AC-3 and other codecs are copied');
  // Source PIDs kept, in output order.
  t.same(
    a.flatMap((x, i) => (x === '-streamid' ? [a[i + 1]] : [])),
    ['0:257', '1:258', '2:260'],
  );
});

t.test(
  'output written in whole buffers at a constant rate high enough, else per packet',
  async (t) => {
    const flushes = (a: string[]) => after(a, '-flush_packets');
    t.equal(BUFFERED_OUTPUT_MIN_KBPS, 1049, '32 KiB fill within 250 ms');
    t.equal(flushes(defaults), '0', 'constant 5000k: whole buffers');
    t.equal(defaults.indexOf('-flush_packets'), defaults.length - 5, 'an output option');
    const video = (kbps: number, mode = 0, total = 0) =>
      transcoderArgs(
        { 'enc-video-bitrate': kbps, 'enc-video-bitrate-mode': mode, 'enc-bitrate': total },
        SRC,
      );
    t.equal(flushes(video(2000)), '0');
    t.equal(flushes(video(BUFFERED_OUTPUT_MIN_KBPS)), '0');
    t.equal(
      flushes(video(BUFFERED_OUTPUT_MIN_KBPS - 1)),
      undefined,
      'constant, too low: per packet',
    );
    t.equal(flushes(video(200)), undefined);
    t.equal(flushes(video(5000, 1)), undefined, 'variable rate: per packet');
    t.equal(flushes(video(5000, 2)), undefined);
    t.equal(flushes(video(500, 1, 3000)), '0', 'a padded multiplex keeps its rate');
    t.equal(flushes(video(5000, 0, 800)), undefined, 'the multiplex rate rules when set');
  },
);

t.test('enc-pmt-pid, patpmt-interval, enc-bitrate, subtitles', async (t) => {
  const a = transcoderArgs(
    { 'enc-pmt-pid': 4000, 'patpmt-interval': 4500, 'enc-bitrate': 8000 },
    {
      ...SRC,
      subtitles: [270],
    },
  );
  t.equal(after(a, '-mpegts_pmt_start_pid'), '4000');
  t.equal(after(a, '-pat_period'), '0.05');
  t.equal(after(a, '-muxrate'), '8000k');
  t.ok(a.includes('0:i:270'));
  t.equal(after(a, '-c:s'), 'copy');
  const noVideo = transcoderArgs({}, { ...SRC, videoPid: undefined });
  t.equal(after(noVideo, '-map'), '0:v:0?');
});

t.test('enc-opt: allowed pairs go to the encoder, the rest is refused', async (t) => {
  const x264 = transcoderArgs({ 'enc-opt': 'aq-mode=2:ref=3' }, SRC);
  t.equal(after(x264, '-x264-params'), 'scenecut=0:nal-hrd=cbr:aq-mode=2:ref=3');
  const m2 = transcoderArgs({ 'enc-type': 0, 'enc-opt': 'intra_vlc=1:qmax=20' }, SRC);
  t.equal(after(m2, '-intra_vlc'), '1');
  t.equal(after(m2, '-qmax'), '20');
  t.same(parseEncOpt('', 'x264'), { pairs: [] });
  const refused = [
    ['stats=x', 'x264'], // writes a file
    ['f=null', 'x264'], // an ffmpeg option, not an encoder setting
    ['aq-mode=1/2', 'x264'],
    ['aq-mode=a b', 'x264'],
    ['ref', 'x264'],
    ['-i=x', 'mpeg2'],
    ['filter_complex=x', 'mpeg2'],
    ['csv=log', 'x265'],
    ['me=hex;rm', 'x264'],
  ] as const;
  for (const [text, family] of refused)
    t.ok('error' in parseEncOpt(text, family), `${text} refused`);
  const bad = transcoderArgs({ 'enc-opt': 'stats=/tmp/x' }, SRC);
  t.equal(after(bad, '-x264-params'), 'scenecut=0:nal-hrd=cbr', 'a refused enc-opt adds nothing');
});

t.test('source programme from the PMT; progress lines', async (t) => {
  const pmt = buildPmt({
    programNumber: 3,
    version: 0,
    currentNext: true,
    pcrPid: 0x100,
    programInfo: Buffer.alloc(0),
    streams: [
      { streamType: 0x1b, pid: 0x100, descriptors: Buffer.alloc(0) },
      { streamType: 0x03, pid: 0x101, descriptors: Buffer.alloc(0) },
      { streamType: 0x06, pid: 0x102, descriptors: Buffer.from([0x6a, 0x01, 0x00]) },
      { streamType: 0x06, pid: 0x103, descriptors: Buffer.from([0x59, 0x00]) },
      { streamType: 0x0f, pid: 0x104, descriptors: Buffer.alloc(0) },
      { streamType: 0x05, pid: 0x105, descriptors: Buffer.alloc(0) },
    ],
  });
  t.same(programmeOf(0x20, pmt), {
    programNumber: 3,
    pmtPid: 0x20,
    videoPid: 0x100,
    audio: [
      { pid: 0x101, codec: 'mpeg' },
      { pid: 0x102, codec: 'ac3' },
      { pid: 0x104, codec: 'aac' },
    ],
    subtitles: [0x103],
  });
  t.equal(classify({ streamType: 0x87, pid: 1, descriptors: Buffer.alloc(0) }), 'other');
  t.same(
    parseProgress({
      frame: '250',
      fps: '25.02',
      bitrate: '812.3kbits/s',
      speed: '1.01x',
      drop_frames: '2',
      dup_frames: '1',
    }),
    {
      frames: 250,
      fps: 25.02,
      bitrate: 812300,
      speed: 1.01,
      droppedFrames: 2,
      duplicatedFrames: 1,
    },
  );
  t.same(parseProgress({ bitrate: 'N/A', speed: 'N/A' }).bitrate, 0);
});

t.test('stderr: at most N lines a window, the rest counted once', async (t) => {
  const limit = new LineRateLimit(3, 10_000);
  const at = (now: number, n: number) => Array.from({ length: n }, () => limit.take(now));
  t.same(
    at(0, 5).map((r) => r.log),
    [true, true, true, false, false],
  );
  t.same(at(9_999, 1), [{ log: false, suppressed: 0 }], 'same window');
  t.same(at(10_000, 2), [
    { log: true, suppressed: 3 },
    { log: true, suppressed: 0 },
  ]);
});
