// The `hls` input with real peers on loopback: ffmpeg's HLS muxer writes playlists and segments
// (MPEG-TS, fMP4, AES-128) into a directory that nginx serves; a stream pulls them and ffprobe
// reads its /name/mpegts. Variant choice, live stall and resume, failover to a backup input, a
// missing segment, and the bounds (a playlist referencing itself, 10 000 variants, a 500 MB
// segment).
import { type ChildProcess, execFileSync, spawn } from 'node:child_process';
import { mkdirSync, truncateSync, unlinkSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import t, { type Test } from 'tap';
import { StreamDriver } from '../../src/drivers/stream/driver.ts';
import type { StreamInstance } from '../../src/drivers/stream/instance.ts';
import { startNginx } from '../helpers/nginx.ts';
import {
  avOffset,
  ffprobe,
  httpFor,
  makeFixture,
  makeHost,
  streamResource,
  tempDir,
  waitFor,
} from '../helpers/stream-host.ts';

const root = tempDir(t, 'sluice-hls-root-');
const host = makeHost(tempDir(t));
const driver = new StreamDriver();
const base = await httpFor(t, host.router);
const origin = await startNginx(t, root);

const SRC = [
  ...['-hide_banner', '-loglevel', 'error', '-y'],
  ...['-f', 'lavfi', '-i', 'testsrc2=size=320x240:rate=25'],
  ...['-f', 'lavfi', '-i', 'sine=frequency=440:sample_rate=48000'],
];
const X264 = ['-c:v', 'libx264', '-preset', 'ultrafast', '-g', '25', '-c:a', 'aac', '-b:a', '64k'];

/** A VOD rendition (`seconds` long, 1 s segments) written into root/name/. */
function vod(name: string, seconds: number, extra: string[] = [], playlist = 'index.m3u8'): string {
  const dir = join(root, name);
  mkdirSync(dir, { recursive: true });
  execFileSync(
    'ffmpeg',
    [
      ...SRC,
      ...['-t', String(seconds)],
      ...X264,
      ...['-f', 'hls', '-hls_time', '1', '-hls_list_size', '0', '-hls_playlist_type', 'vod'],
      ...extra,
      join(dir, playlist),
    ],
    { cwd: dir },
  );
  return dir;
}

/** A live rendition written at real time; killed on teardown. */
function live(t: Test, name: string): { proc: ChildProcess; dir: string } {
  const dir = join(root, name);
  mkdirSync(dir, { recursive: true });
  const proc = spawn(
    'ffmpeg',
    [
      '-re',
      ...SRC,
      ...X264,
      ...['-f', 'hls', '-hls_time', '1', '-hls_list_size', '5'],
      ...['-hls_flags', 'delete_segments', join(dir, 'index.m3u8')],
    ],
    { stdio: 'ignore', cwd: dir },
  );
  t.teardown(() => {
    if (proc.exitCode === null && proc.signalCode === null) {
      proc.kill('SIGCONT');
      proc.kill('SIGKILL');
    }
  });
  return { proc, dir };
}

async function stream(
  t: Test,
  name: string,
  spec: Record<string, unknown>,
  running = true,
): Promise<StreamInstance> {
  const inst = (await driver.create(
    streamResource({ 'stream-name': name, 'stream-timeout': 3_000_000, ...spec }),
    host,
  )) as StreamInstance;
  t.teardown(() => inst.close());
  if (running) await waitFor(() => inst.state() === 'running', 20_000, `${name} running`);
  return inst;
}

function transport(s: StreamInstance, i = 0): Record<string, unknown> {
  return (s.status()['inputs'] as Record<string, Record<string, unknown>>[])[i]!['transport']!;
}

function input(s: StreamInstance, i = 0): Record<string, unknown> {
  return (s.status()['inputs'] as Record<string, unknown>[])[i]!;
}

type Probed = Awaited<ReturnType<typeof ffprobe>>[number] & { width?: number; height?: number };

function expectAv(t: Test, streams: Probed[]): void {
  t.equal(streams.find((s) => s.codec_type === 'video')?.codec_name, 'h264', 'H.264 video');
  t.equal(streams.find((s) => s.codec_type === 'audio')?.codec_name, 'aac', 'AAC audio');
}

t.test('master playlist of three variants: adaptive-stream-id 2 takes the second', async (t) => {
  const dir = join(root, 'abr');
  mkdirSync(dir, { recursive: true });
  execFileSync(
    'ffmpeg',
    [
      ...SRC,
      ...['-t', '6', '-map', '0:v', '-map', '1:a', '-map', '0:v', '-map', '1:a', '-map', '0:v'],
      ...['-map', '1:a', '-s:v:0', '160x120', '-s:v:1', '320x240', '-s:v:2', '480x360'],
      ...X264,
      ...['-f', 'hls', '-hls_time', '1', '-hls_list_size', '0', '-hls_playlist_type', 'vod'],
      ...['-master_pl_name', 'master.m3u8', '-var_stream_map', 'v:0,a:0 v:1,a:1 v:2,a:2'],
      join(dir, 'v%v.m3u8'),
    ],
    { cwd: dir },
  );
  const s = await stream(t, 'abr', {
    input: [{ type: 'hls', uri: `${origin.base}/abr/master.m3u8`, 'adaptive-stream-id': 2 }],
  });
  const streams = (await ffprobe(`${base}/abr/mpegts`)) as Probed[];
  expectAv(t, streams);
  const v = streams.find((x) => x.codec_type === 'video');
  t.equal(`${v?.width}x${v?.height}`, '320x240', 'the second variant (320x240)');
  const tr = transport(s);
  t.match(tr['variant'], { index: 2, resolution: '320x240' });
  t.equal(tr['variants'], 3);
  t.equal(tr['live'], false, 'VOD');
  // A/V offset of the output equals the source's (the variant's first segment) within 100 ms.
  const src = await avOffset(join(dir, 'v10.ts'));
  const out = await avOffset(`${base}/abr/mpegts`);
  t.ok(Math.abs(src - out) < 0.1, `first PTS difference ${out} s, source ${src} s`);
});

t.test('fMP4 segments are remuxed to TS', async (t) => {
  vod('fmp4', 4, ['-hls_segment_type', 'fmp4']);
  const s = await stream(t, 'fmp4', {
    input: [{ type: 'hls', uri: `${origin.base}/fmp4/index.m3u8` }],
  });
  expectAv(t, await ffprobe(`${base}/fmp4/mpegts`));
  const tr = transport(s);
  t.ok(Number((tr['remux'] as Record<string, number>)['frames']) > 0, 'frames remuxed');
  t.equal(tr['badSegments'], 0);
  const out = await avOffset(`${base}/fmp4/mpegts`);
  t.ok(Math.abs(out) < 0.2, `A/V first PTS difference ${out} s`);
});

t.test('AES-128 encrypted segments are decrypted', async (t) => {
  const dir = join(root, 'aes');
  mkdirSync(dir, { recursive: true });
  writeFileSync(join(dir, 'enc.key'), Buffer.from('00112233445566778899aabbccddeeff', 'hex'));
  writeFileSync(join(dir, 'keyinfo'), `enc.key\n${join(dir, 'enc.key')}\n`);
  vod('aes', 4, ['-hls_key_info_file', join(dir, 'keyinfo')]);
  const s = await stream(t, 'aes', {
    input: [{ type: 'hls', uri: `${origin.base}/aes/index.m3u8` }],
  });
  expectAv(t, await ffprobe(`${base}/aes/mpegts`));
  t.equal(transport(s)['badSegments'], 0, 'every segment decrypted');
});

t.test('a 404 segment is skipped and counted; VOD loops', async (t) => {
  const dir = vod('holes', 4);
  unlinkSync(join(dir, 'index1.ts'));
  const s = await stream(t, 'holes', {
    input: [{ type: 'hls', uri: `${origin.base}/holes/index.m3u8`, preload: 2 }],
  });
  await waitFor(() => Number(transport(s)['loops']) >= 1, 15_000, 'the playlist looped');
  const tr = transport(s);
  t.ok(Number(tr['notFound']) >= 1, '404 counted');
  t.ok(Number(tr['discontinuities']) >= 1, 'discontinuity at the hole and the loop');
  t.equal(s.state(), 'running');
});

t.test('live: stalled origin is reported, the input resumes', async (t) => {
  const { proc } = live(t, 'live');
  await waitFor(
    async () => {
      try {
        return (await fetch(`${origin.base}/live/index.m3u8`)).ok;
      } catch {
        return false;
      }
    },
    15_000,
    'live playlist',
  );
  const s = await stream(t, 'live', {
    input: [{ type: 'hls', uri: `${origin.base}/live/index.m3u8` }],
  });
  t.equal(transport(s)['live'], true);
  expectAv(t, await ffprobe(`${base}/live/mpegts`));
  proc.kill('SIGSTOP');
  await waitFor(() => /not updated/.test(String(input(s)['message'] ?? '')), 15_000, 'stale');
  const before = Number(transport(s)['segments']);
  proc.kill('SIGCONT');
  await waitFor(() => Number(transport(s)['segments']) > before + 1, 15_000, 'segments again');
  await waitFor(() => input(s)['message'] === undefined, 10_000, 'fault cleared');
  t.pass('resumed');
});

t.test('origin dies: the stream fails over to its backup input', async (t) => {
  const { proc, dir } = live(t, 'dying');
  await waitFor(
    async () => (await fetch(`${origin.base}/dying/index.m3u8`).catch(() => null))?.ok,
    15_000,
    'live playlist',
  );
  const fixture = makeFixture(tempDir(t), 5);
  const s = await stream(t, 'fo', {
    'stream-timeout': 2_000_000,
    input: [
      { type: 'hls', uri: `${origin.base}/dying/index.m3u8`, 'client-timeout': 2 },
      { type: 'file', 'file-path': fixture },
    ],
  });
  t.equal(s.status()['activeInput'], 0, 'on the hls primary');
  proc.kill('SIGKILL');
  execFileSync('rm', ['-rf', dir]);
  await waitFor(() => s.status()['activeInput'] === 1, 20_000, 'backup active');
  await waitFor(() => Boolean(input(s)['message']), 20_000, 'primary fault in words');
  t.match(String(input(s)['message']), /404|not updated/);
});

t.test('bounds: self reference, 10 000 variants, a 500 MB segment', async (t) => {
  const dir = join(root, 'bad');
  mkdirSync(dir, { recursive: true });
  writeFileSync(join(dir, 'self.m3u8'), '#EXTM3U\n#EXT-X-STREAM-INF:BANDWIDTH=1\nself.m3u8\n');
  const many = ['#EXTM3U'];
  for (let i = 0; i < 10_000; i++) many.push(`#EXT-X-STREAM-INF:BANDWIDTH=${i + 1}`, `v${i}.m3u8`);
  writeFileSync(join(dir, 'many.m3u8'), `${many.join('\n')}\n`);
  writeFileSync(join(dir, 'huge.ts'), '');
  truncateSync(join(dir, 'huge.ts'), 500 * 1024 * 1024); // sparse
  writeFileSync(
    join(dir, 'huge.m3u8'),
    '#EXTM3U\n#EXT-X-TARGETDURATION:2\n#EXTINF:2,\nhuge.ts\n#EXT-X-ENDLIST\n',
  );
  const self = await stream(
    t,
    'self',
    { input: [{ type: 'hls', uri: `${origin.base}/bad/self.m3u8` }] },
    false,
  );
  const many2 = await stream(
    t,
    'many',
    { input: [{ type: 'hls', uri: `${origin.base}/bad/many.m3u8`, 'adaptive-stream-id': 5000 }] },
    false,
  );
  const huge = await stream(
    t,
    'huge',
    { input: [{ type: 'hls', uri: `${origin.base}/bad/huge.m3u8` }] },
    false,
  );
  await waitFor(() => /references itself/.test(String(input(self)['message'])), 10_000, 'self');
  await waitFor(() => /lists 10000 variant/.test(String(input(many2)['message'])), 10_000, 'many');
  await waitFor(() => Number(transport(huge)['oversize']) >= 1, 10_000, 'oversize counted');
  t.match(String(input(many2)['message']), /only the first 1000/);
  t.pass('bounded');
});
