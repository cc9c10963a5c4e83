// The transcoder input end to end: a tiny test-generator stream (320×180, MPEG audio) decoded
// and re-encoded by two `transcoder` streams read over HTTP-TS and checked with ffprobe: H.264
// at half size, the GOP asked for (key frames 10 frames apart), B-frames, MPEG audio → AAC
// (rule `aac`) or dropped (rule `skip`); the encoder's progress in the status and /metrics;
// the encoder killed comes back (restart with backoff) and the stream delivers again.
import { spawn } from 'node:child_process';
import { join } from 'node:path';
import t from 'tap';
import type { StreamInstance } from '../../src/drivers/stream/instance.ts';
import { metricsRegistry } from '../../src/drivers/stream/metrics.ts';
import { captureForMs } from '../helpers/mpts.ts';
import { ffprobe, httpFor, makeHost, streamSet, tempDir, waitFor } from '../helpers/stream-host.ts';

const GOP = 10;
const dir = tempDir(t, 'sluice-transcoder-');
const host = makeHost(dir);
const base = await httpFor(t, host.router);

const { open: stream } = streamSet(t, host);

/** `ms` of a stream's HTTP-TS output, written to a file for ffprobe. */
const capture = (name: string, ms: number) =>
  captureForMs(`${base}/${name}/mpegts`, ms, join(dir, `${name}.ts`));

/** Picture types of the video frames of a file, in order, and the key-frame flags. */
async function frames(file: string): Promise<{ key: boolean; type: string }[]> {
  const args = [
    '-v',
    'error',
    '-select_streams',
    'v:0',
    '-show_entries',
    'frame=key_frame,pict_type',
  ];
  args.push('-of', 'csv=p=0', file);
  const out = await new Promise<string>((resolve, reject) => {
    const p = spawn('ffprobe', args, { stdio: ['ignore', 'pipe', 'pipe'] });
    let s = '';
    p.stdout.on('data', (d) => (s += d));
    p.on('close', (code) => (code === 0 ? resolve(s) : reject(new Error(`ffprobe ${code}`))));
  });
  return out
    .split('\n')
    .filter((l) => l.trim())
    .map((l) => {
      const [key, type] = l.split(',');
      return { key: key === '1', type: type ?? '' };
    });
}

function transport(s: StreamInstance): Record<string, unknown> {
  const { inputs } = s.status() as unknown as { inputs: { transport?: Record<string, unknown> }[] };
  return inputs[0]?.transport ?? {};
}

await stream({
  id: 1,
  'stream-name': 'src',
  input: [
    {
      type: 'test',
      width: 320,
      height: 180,
      'video-bitrate': 300,
      'enable-overlay': false,
      'audio-enc': 0,
    },
  ],
});
const enc = {
  type: 'transcoder',
  'decoder-id': 1,
  'enc-video-bitrate': 200,
  'enc-gop-interval': GOP,
  'enc-speed-preset': 7,
  'enc-resize': '2',
  'enc-aud-bitrate': 64,
};
const aac = await stream({
  id: 2,
  'stream-name': 'h264aac',
  input: [{ ...enc, 'enc-bframe': 2, 'enc-aud-rule-mpeg': 'aac' }],
});
await stream({
  id: 3,
  'stream-name': 'h264mute',
  input: [{ ...enc, 'enc-bframe': 0, 'enc-aud-rule-mpeg': 'skip' }],
});

await waitFor(() => aac.status().state === 'running', 20_000, 'the transcoder stream to run');

t.test('H.264 at the size, GOP and B-frames asked for; MPEG audio → AAC', async (t) => {
  const file = await capture('h264aac', 3000);
  const streams = (await ffprobe(file)) as unknown as {
    codec_name: string;
    codec_type: string;
    width?: number;
    height?: number;
    has_b_frames?: number;
  }[];
  const v = streams.find((s) => s.codec_type === 'video');
  t.equal(v?.codec_name, 'h264');
  t.same([v?.width, v?.height], [160, 90], 'enc-resize 2 halves 320×180');
  t.ok((v?.has_b_frames ?? 0) >= 1, 'has_b_frames');
  t.same(
    streams.filter((s) => s.codec_type === 'audio').map((s) => s.codec_name),
    ['aac'],
    'rule aac',
  );
  const f = await frames(file);
  const keys = f.flatMap((x, i) => (x.key ? [i] : []));
  t.ok(keys.length >= 3, `key frames seen (${keys.length})`);
  const gaps = keys.slice(1).map((k, i) => k - keys[i]!);
  t.same([...new Set(gaps)], [GOP], `key frames ${GOP} frames apart`);
  t.ok(
    f.some((x) => x.type === 'B'),
    'B pictures',
  );
});

t.test('rule skip drops the audio; enc-bframe 0 has none', async (t) => {
  const file = await capture('h264mute', 2000);
  const streams = await ffprobe(file);
  t.same(
    streams.map((s) => s.codec_type),
    ['video'],
  );
  t.notOk(
    (await frames(file)).some((x) => x.type === 'B'),
    'no B pictures',
  );
});

t.test('progress in the status and /metrics; the encoder restarts when killed', async (t) => {
  const before = (await waitFor(
    () => {
      const tr = transport(aac);
      const e = tr['encoder'] as { fps: number; frames: number } | undefined;
      return e && e.frames > 0 ? tr : false;
    },
    10_000,
    'encoder progress',
  )) as Record<string, unknown>;
  t.match(before['source'], { programNumber: 1, audio: [{ codec: 'mpeg' }] });
  const m = aac.metricsSnapshot().encoder;
  t.ok(m && m.frames > 0 && m.bitrate > 0, 'metrics: frames and bitrate');
  t.equal(m?.restarts, 0);
  const text = await metricsRegistry(host.services).metrics();
  t.match(text, /\nsluice_stream_encoder_fps\{stream="h264aac"\} [1-9]/, '/metrics: encoder fps');
  t.match(text, /\nsluice_stream_encoder_restarts\{stream="h264aac"\} 0\n/);
  const pid = before['pid'] as number;
  process.kill(pid, 'SIGKILL');
  const after = (await waitFor(
    () => {
      const tr = transport(aac);
      return tr['restarts'] === 1 && typeof tr['pid'] === 'number' && tr['pid'] !== pid
        ? tr
        : false;
    },
    10_000,
    'the encoder to restart',
  )) as Record<string, unknown>;
  t.equal(after['lastExit'], 'killed by SIGKILL');
  const outBefore = after['bytesOut'] as number;
  await waitFor(
    () => (transport(aac)['bytesOut'] as number) > outBefore + 10_000,
    10_000,
    'output after the restart',
  );
  await waitFor(() => aac.status().state === 'running', 10_000, 'the stream running again');
  t.equal(aac.metricsSnapshot().encoder?.restarts, 1);
});
