// Acceptance of the transcoder input (issue 23): a 1080i source (testsrc2 1920×1080, MPEG-2
// coded interlaced, top field first, MP2 audio; a 4 s file played by a looping `file` input)
// → a transcoder to 720p H.264 at 2 Mbit/s constant, ultrafast. On its HTTP-TS output ffprobe
// shows 1280×720, progressive, a key frame every GOP frames exactly, the B-frames asked for,
// and the video's bitrate within 10 % of 2 Mbit/s over at least 30 s of whole GOPs (across
// the source's loops: each is a timestamp jump the transcoder takes out, docs/transcoder.md
// "Source discontinuities"); MP2 with rule `aac` comes out AAC. Rule `skip` drops the MP2 track. A
// 5.1 AC-3 source with rule `aac` comes out stereo, and the 5.1 gain is applied: gains 2 and
// 0.5 differ by 12 dB.
import { execFileSync, spawn } from 'node:child_process';
import { join } from 'node:path';
import t from 'tap';
import type { StreamInstance } from '../../src/drivers/stream/instance.ts';
import { captureForMs } from '../helpers/mpts.ts';
import { httpFor, makeHost, streamSet, tempDir, waitFor } from '../helpers/stream-host.ts';

const GOP = 50;
const BFRAMES = 2;
const RATE_KBPS = 2000;
const FPS = 25;
/** Whole GOPs of video measured for the bitrate: at least this long. */
const MEASURE_S = 30;

const dir = tempDir(t, 'sluice-transcoder-acc-');
const host = makeHost(dir);
const base = await httpFor(t, host.router);
const set = streamSet(t, host);

function ffmpeg(args: string[]): void {
  execFileSync('ffmpeg', ['-hide_banner', '-loglevel', 'error', '-y', ...args]);
}

// 1080i: 50 progressive pictures a second woven into 25 interlaced frames (top field first),
// coded as interlaced MPEG-2 (field DCT and motion estimation). GOP 25: the file loops on one.
// Looping 4 s was measured at 1.5 instead of 2 Mbit/s before the jumps were taken out.
const hd = join(dir, '1080i.ts');
ffmpeg([
  ...['-f', 'lavfi', '-i', 'testsrc2=size=1920x1080:rate=50'],
  ...['-f', 'lavfi', '-i', 'sine=frequency=1000:sample_rate=48000'],
  ...['-t', '4', '-vf', 'tinterlace=mode=interleave_top,setfield=tff'],
  ...['-c:v', 'mpeg2video', '-flags', '+ilme+ildct', '-top', '1', '-b:v', '8M', '-g', '25'],
  ...['-c:a', 'mp2', '-b:a', '192k', '-f', 'mpegts', hd],
]);
// 5.1 AC-3: tones on front left, front right and centre, the other channels silent.
const surround = join(dir, 'ac3.ts');
const tone = (f: number) => `0.1*sin(2*PI*${f}*t)`;
ffmpeg([
  ...['-f', 'lavfi', '-i', 'testsrc2=size=320x180:rate=25'],
  ...['-f', 'lavfi', '-i'],
  `aevalsrc=${tone(440)}|${tone(440)}|${tone(660)}|0|0|0:channel_layout=5.1:sample_rate=48000`,
  ...['-t', '4', '-c:v', 'libx264', '-preset', 'ultrafast', '-g', '25', '-b:v', '300k'],
  ...['-c:a', 'ac3', '-b:a', '384k', '-f', 'mpegts', surround],
]);

/** Run a program, resolve its stdout (stderr with `stderr`); reject on a non-zero exit. */
function run(cmd: string, args: string[], stderr = false): Promise<string> {
  return new Promise((resolve, reject) => {
    const p = spawn(cmd, args, { stdio: ['ignore', 'pipe', 'pipe'] });
    let out = '';
    let err = '';
    p.stdout.on('data', (d) => (out += d));
    p.stderr.on('data', (d) => (err += d));
    p.on('close', (code) =>
      code === 0 ? resolve(stderr ? err : out) : reject(new Error(`${cmd} ${code}: ${err}`)),
    );
  });
}

interface Probed {
  codec_name: string;
  codec_type: string;
  width?: number;
  height?: number;
  field_order?: string;
  has_b_frames?: number;
  channels?: number;
}

async function probe(file: string): Promise<Probed[]> {
  const out = await run('ffprobe', ['-v', 'error', '-show_streams', '-of', 'json', file]);
  return (JSON.parse(out) as { streams: Probed[] }).streams;
}

/** `ms` of a stream's HTTP-TS output, written to a file for ffprobe. */
const capture = (name: string, ms: number) =>
  captureForMs(`${base}/${name}/mpegts`, ms, join(dir, `${name}.ts`));

/** The video packets of a file in decoding order: size, key flag, pts (s). */
async function videoPackets(file: string): Promise<{ size: number; key: boolean; pts: number }[]> {
  const out = await run('ffprobe', [
    ...['-v', 'error', '-select_streams', 'v:0'],
    ...['-show_entries', 'packet=size,flags,pts_time', '-of', 'csv=p=0', file],
  ]);
  return out
    .split('\n')
    .filter((l) => l.trim())
    .map((l) => {
      const [pts, size, flags] = l.split(',');
      return { pts: Number(pts), size: Number(size), key: (flags ?? '').startsWith('K') };
    });
}

function transport(s: StreamInstance): Record<string, unknown> {
  const { inputs } = s.status() as unknown as { inputs: { transport?: Record<string, unknown> }[] };
  return inputs[0]?.transport ?? {};
}

const transcoder = {
  type: 'transcoder',
  'enc-type': 1,
  'enc-speed-preset': 7,
  'enc-aud-bitrate': 128,
};

await set.open({ id: 1, 'stream-name': 'src1080i', input: [{ type: 'file', 'file-path': hd }] });

t.test('the source is 1080i', async (t) => {
  const [v] = (await probe(hd)).filter((s) => s.codec_type === 'video');
  t.same([v?.width, v?.height, v?.field_order], [1920, 1080, 'tt']);
});

t.test('1080i → 720p H.264, 2 Mbit/s constant, GOP and B-frames, MP2 → AAC', async (t) => {
  const key = '2';
  const s = await set.open({
    id: 2,
    'stream-name': 'hd720',
    input: [
      {
        ...transcoder,
        'decoder-id': 1,
        'enc-video-bitrate': RATE_KBPS,
        'enc-video-bitrate-mode': 0,
        'enc-width': 1280,
        'enc-height': 720,
        'enc-deinterlace': true,
        'enc-gop-interval': GOP,
        'enc-bframe': BFRAMES,
        'enc-aud-rule-mpeg': 'aac',
      },
    ],
  });
  await waitFor(() => s.state() === 'running', 20_000, 'the transcoder stream to run');
  // Whole GOPs spanning MEASURE_S, whatever GOP the capture joins in: two GOPs more.
  const file = await capture('hd720', (MEASURE_S + (2 * GOP) / FPS + 1) * 1000);
  const tr = transport(s);
  const enc = tr['encoder'] as { speed: number; fps: number; droppedFrames: number };
  t.comment(
    `encoder: ${enc.fps} fps, speed ${enc.speed}×, dropped frames ${enc.droppedFrames}, ` +
      `source bytes dropped ${tr['droppedBytes']}`,
  );
  t.equal(tr['droppedBytes'], 0, 'the encoder kept up with the source (no bytes dropped)');
  t.ok(Number(tr['sourceJumps']) >= MEASURE_S / 4, `${tr['sourceJumps']} loops of the 4 s source`);

  const streams = await probe(file);
  const v = streams.find((x) => x.codec_type === 'video');
  t.equal(v?.codec_name, 'h264');
  t.same([v?.width, v?.height], [1280, 720], '1280×720');
  t.equal(v?.field_order, 'progressive', 'progressive');
  t.equal(v?.has_b_frames, BFRAMES, `${BFRAMES} B-frames`);
  t.same(
    streams.filter((x) => x.codec_type === 'audio').map((x) => x.codec_name),
    ['aac'],
    'MP2 with rule aac comes out AAC',
  );

  const packets = await videoPackets(file);
  const keys = packets.flatMap((p, i) => (p.key ? [i] : []));
  const gaps = [...new Set(keys.slice(1).map((k, i) => k - keys[i]!))];
  t.same(gaps, [GOP], `key frames ${GOP} frames apart (${keys.length} key frames)`);
  t.ok(
    packets.some((p, i) => i > 0 && p.pts < packets[i - 1]!.pts),
    'pictures reordered (B-frames present)',
  );
  // The bitrate over whole GOPs: bytes of the frames from the first key frame up to the last,
  // over their duration in frames (25 fps).
  const first = keys[0]!;
  const last = keys[keys.length - 1]!;
  const seconds = (last - first) / FPS;
  t.ok(seconds >= MEASURE_S, `measured over ${seconds} s of whole GOPs`);
  const bytes = packets.slice(first, last).reduce((n, p) => n + p.size, 0);
  const kbps = (bytes * 8) / seconds / 1000;
  t.ok(
    Math.abs(kbps - RATE_KBPS) <= RATE_KBPS * 0.1,
    `video ${kbps.toFixed(0)} kbit/s over ${seconds} s, within 10 % of ${RATE_KBPS}`,
  );
  await set.close(key, s);
});

t.test('rule skip drops the MP2 track', async (t) => {
  const s = await set.open({
    id: 3,
    'stream-name': 'hdmute',
    input: [
      {
        ...transcoder,
        'decoder-id': 1,
        'enc-video-bitrate': 1000,
        'enc-resize': '4',
        'enc-aud-rule-mpeg': 'skip',
      },
    ],
  });
  await waitFor(() => s.state() === 'running', 20_000, 'the transcoder stream to run');
  const streams = await probe(await capture('hdmute', 2000));
  t.same(
    streams.map((x) => x.codec_type),
    ['video'],
  );
  await set.close('3', s);
});

t.test('5.1 AC-3 → stereo AAC with the 5.1 gain', async (t) => {
  await set.open({
    id: 4,
    'stream-name': 'src51',
    input: [{ type: 'file', 'file-path': surround }],
  });
  const levels: number[] = [];
  for (const [id, gain] of [
    [5, 2],
    [6, 0.5],
  ] as const) {
    const name = `stereo${id}`;
    const s = await set.open({
      id,
      'stream-name': name,
      input: [
        {
          ...transcoder,
          'decoder-id': 4,
          'enc-video-bitrate': 300,
          'enc-aud-rule-ac3': 'aac',
          'enc-aud-volume-51': gain,
        },
      ],
    });
    await waitFor(() => s.state() === 'running', 20_000, `${name} to run`);
    const file = await capture(name, 3000);
    const audio = (await probe(file)).filter((x) => x.codec_type === 'audio');
    t.same(
      audio.map((x) => [x.codec_name, x.channels]),
      [['aac', 2]],
      `gain ${gain}: AAC, 2 channels`,
    );
    const err = await run(
      'ffmpeg',
      ['-hide_banner', '-i', file, '-map', '0:a', '-af', 'volumedetect', '-f', 'null', '-'],
      true,
    );
    const max = /max_volume: (-?[\d.]+) dB/.exec(err);
    t.ok(max, `gain ${gain}: level measured`);
    levels.push(Number(max?.[1]));
    await set.close(String(id), s);
  }
  const diff = levels[0]! - levels[1]!;
  // 20·log10(2 / 0.5) = 12.04 dB.
  t.ok(Math.abs(diff - 12.04) <= 1, `gain 2 is ${diff.toFixed(1)} dB over gain 0.5 (12 dB)`);
});
