// A source whose timestamps jump (a 4.2 s file looped by a `file` input: back 4.2 s at every
// loop) through transcoders (docs/transcoder.md "Source discontinuities"): the jump is taken out
// before the encoder, so
// - a transcoder at 2 Mbit/s constant holds its rate within 10 % over 30 s of whole GOPs (with
//   the jumps passed to x264, the same encode came out near 1.6 Mbit/s);
// - a ladder of three renditions of that source, started one after the other (the later ones
//   after a loop), still cuts its HLS segments at the same PTS, on the GOP grid, over a span that
//   crosses a loop (with the jumps passed on, key frames leave the grid at the first loop: 105
//   frames a pass, GOP 25).
import { execFileSync, spawn } from 'node:child_process';
import { join } from 'node:path';
import t from 'tap';
import type { StreamInstance } from '../../src/drivers/stream/instance.ts';
import { checkAlignedSegments, startLadder } from '../helpers/ladder.ts';
import { captureForMs } from '../helpers/mpts.ts';
import { httpFor, makeHost, streamSet, tempDir, waitFor } from '../helpers/stream-host.ts';

const FPS = 25;
const GOP = 25;
const RATE_KBPS = 2000;
const MEASURE_S = 30;
/** The looped file: 105 frames, not a whole number of GOPs. */
const LOOP_FRAMES = 105;
const FRAME_TICKS = 90_000 / FPS;

const dir = tempDir(t, 'sluice-transcoder-jump-');
const loop = join(dir, 'loop.ts');
execFileSync('ffmpeg', [
  ...['-hide_banner', '-loglevel', 'error', '-y'],
  ...['-f', 'lavfi', '-i', `testsrc2=size=640x360:rate=${FPS}`],
  ...['-f', 'lavfi', '-i', 'sine=frequency=1000:sample_rate=48000'],
  ...['-frames:v', String(LOOP_FRAMES), '-t', String(LOOP_FRAMES / FPS)],
  ...['-c:v', 'mpeg2video', '-b:v', '3M', '-g', '25', '-c:a', 'mp2', '-b:a', '192k'],
  ...['-f', 'mpegts', loop],
]);

function run(cmd: string, args: string[]): Promise<string> {
  return new Promise((resolve, reject) => {
    const p = spawn(cmd, args, { stdio: ['ignore', 'pipe', 'pipe'] });
    let out = '';
    let err = '';
    p.stdout.on('data', (d) => (out += d));
    p.stderr.on('data', (d) => (err += d));
    p.on('close', (code) =>
      code === 0 ? resolve(out) : reject(new Error(`${cmd} ${code}: ${err}`)),
    );
  });
}

/** The video packets of a file in decoding order: size, key flag, pts (90 kHz). */
async function videoPackets(file: string): Promise<{ size: number; key: boolean; pts: number }[]> {
  const out = await run('ffprobe', [
    ...['-v', 'error', '-select_streams', 'v:0'],
    ...['-show_entries', 'packet=size,flags,pts', '-of', 'csv=p=0', file],
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

t.test('2 Mbit/s constant from a looping source holds its rate', async (t) => {
  const host = makeHost(dir);
  const base = await httpFor(t, host.router);
  const set = streamSet(t, host);
  await set.open({ id: 1, 'stream-name': 'src', input: [{ type: 'file', 'file-path': loop }] });
  const s = await set.open({
    id: 2,
    'stream-name': 'cbr',
    input: [
      {
        type: 'transcoder',
        'decoder-id': 1,
        'enc-type': 1,
        'enc-speed-preset': 7,
        'enc-video-bitrate': RATE_KBPS,
        'enc-video-bitrate-mode': 0,
        'enc-gop-interval': GOP,
        'enc-bframe': 2,
        'enc-aud-rule-mpeg': 'skip',
      },
    ],
  });
  await waitFor(() => s.state() === 'running', 20_000, 'the transcoder stream to run');
  const file = await captureForMs(
    `${base}/cbr/mpegts`,
    (MEASURE_S + (2 * GOP) / FPS + 1) * 1000,
    join(dir, 'cbr.ts'),
  );
  const tr = transport(s);
  t.ok(
    Number(tr['sourceJumps']) >= Math.floor(MEASURE_S / (LOOP_FRAMES / FPS)),
    `${tr['sourceJumps']} source jumps taken out`,
  );
  t.equal(tr['droppedBytes'], 0, 'the encoder kept up');

  const packets = await videoPackets(file);
  const keys = packets.flatMap((p, i) => (p.key ? [i] : []));
  const gaps = [...new Set(keys.slice(1).map((k, i) => k - keys[i]!))];
  t.same(gaps, [GOP], `key frames ${GOP} frames apart across the loops`);
  const first = keys[0]!;
  const last = keys.at(-1)!;
  const seconds = (last - first) / FPS;
  t.ok(seconds >= MEASURE_S, `measured over ${seconds} s of whole GOPs`);
  // The pictures' timestamps run on, one frame apart, through the loops.
  const span = packets[last]!.pts - packets[first]!.pts;
  t.equal(span, (last - first) * FRAME_TICKS, 'one continuous timeline (no jump in the output)');
  const bytes = packets.slice(first, last).reduce((n, p) => n + p.size, 0);
  const kbps = (bytes * 8) / seconds / 1000;
  t.ok(
    Math.abs(kbps - RATE_KBPS) <= RATE_KBPS * 0.1,
    `video ${kbps.toFixed(0)} kbit/s over ${seconds} s, within 10 % of ${RATE_KBPS}`,
  );
});

t.test('a ladder of the looping source stays aligned across the loops', async (t) => {
  const firstPts = Number.parseInt(
    (
      await run('ffprobe', [
        ...['-v', 'error', '-select_streams', 'v:0', '-read_intervals', '%+#1'],
        ...['-show_entries', 'packet=pts', '-of', 'csv=p=0', loop],
      ])
    ).trim(),
    10,
  );
  const ladder = await startLadder(t, 1, { type: 'file', 'file-path': loop });
  const common = await checkAlignedSegments(t, ladder, 6);
  // The loops on the continuous timeline: the file's first PTS plus whole passes.
  const from = common[0]!;
  const to = common.at(-1)!;
  const pass = LOOP_FRAMES * FRAME_TICKS;
  const crossed = Math.floor((to - firstPts) / pass) - Math.floor((from - firstPts) / pass);
  t.ok(crossed >= 1, `the common span ${from}..${to} crosses ${crossed} loop(s)`);
  const jumps = Number(transport(ladder.streams[2]!)['sourceJumps']);
  t.ok(jumps >= 1, `${jumps} source jumps taken out`);
});
