// An adaptive ladder for tests (docs/transcoder.md "Adaptive ladders"): one tiny test-generator
// source, three `transcoder` streams of it at different sizes and bitrates, opened one after the
// other (each once the previous encoder has produced frames, so every encoder starts at a
// different moment of the source), and a `stream-adaptive` group `abr` over them.
import { spawn } from 'node:child_process';
import type { Test } from 'tap';
import type { Resource } from '../../src/config/types.ts';
import type { StreamInstance } from '../../src/drivers/stream/instance.ts';
import { streamAdaptiveDriver } from '../../src/drivers/stream-adaptive.ts';
import { createOttService, OTT_FACTORY_SERVICE } from '../../src/ott/index.ts';
import type { Host } from '../../src/reconciler/driver.ts';
import { httpFor, makeHost, streamSet, type TapLike, tempDir, waitFor } from './stream-host.ts';

export const LADDER_GOP = 25; // frames: 1 s at 25 frames/s, the segment duration
export const LADDER_SEGMENT_S = 1;

/** Stream id, stream name, encoder settings: highest rendition first. */
export const LADDER_RENDITIONS: [number, string, Record<string, unknown>][] = [
  [2, 'hi', { 'enc-width': 320, 'enc-height': 180, 'enc-video-bitrate': 200 }],
  [3, 'mid', { 'enc-resize': '2', 'enc-video-bitrate': 100 }],
  [4, 'lo', { 'enc-width': 128, 'enc-height': 72, 'enc-video-bitrate': 60 }],
];

export interface Ladder {
  /** Base URL of the HTTP server answering `/{name}/…` (the group is `/abr/`). */
  base: string;
  host: Host;
  group: { status(): unknown; close(): unknown };
  /** The rendition streams, in LADDER_RENDITIONS order. */
  streams: StreamInstance[];
}

function encoderFrames(s: StreamInstance): number {
  const { inputs } = s.status() as unknown as {
    inputs: { transport?: { encoder?: { frames: number } } }[];
  };
  return inputs[0]?.transport?.encoder?.frames ?? 0;
}

/** The source of the ladder: a tiny test generator, 25 frames/s, no audio. */
export const LADDER_TEST_SOURCE: Record<string, unknown> = {
  type: 'test',
  width: 320,
  height: 180,
  'frame-rate': 25,
  'gop-interval': 50,
  'video-bitrate': 300,
  'enable-overlay': false,
  'audio-enc': 0,
};

/** The transcoder input of a rendition of stream 1 with encoder settings `enc`. */
export function transcoderInput(enc: Record<string, unknown>): Record<string, unknown> {
  return {
    type: 'transcoder',
    'decoder-id': 1,
    'enc-gop-interval': LADDER_GOP,
    'enc-speed-preset': 7,
    'enc-bframe': 2,
    'enc-aud-bitrate': 64,
    'enc-aud-rule-mpeg': 'aac',
    ...enc,
  };
}

/** The ladder with `ott-hls` = `ottHls` on every rendition and on the group (1 s segments),
 *  over `source` (the input of stream 1, `src`; 25 frames/s). */
export async function startLadder(
  t: TapLike,
  ottHls: 1 | 2 | 3 = 1,
  source: Record<string, unknown> = LADDER_TEST_SOURCE,
): Promise<Ladder> {
  const dir = tempDir(t, 'sluice-ladder-');
  const host = makeHost(dir);
  host.services.set(OTT_FACTORY_SERVICE, createOttService);
  const base = await httpFor(t, host.router);
  const { open: stream } = streamSet(t, host);
  const ott = { 'ott-hls': ottHls, 'ott-segment-duration': LADDER_SEGMENT_S, 'ott-window': 10 };

  await stream({
    id: 1,
    'stream-name': 'src',
    input: [source],
  });
  const streams: StreamInstance[] = [];
  for (const [id, name, enc] of LADDER_RENDITIONS) {
    const s = await stream({
      id,
      'stream-name': name,
      ...ott,
      input: [transcoderInput(enc)],
    });
    streams.push(s);
    // The next rendition's encoder starts once this one encodes: a different source moment.
    await waitFor(() => encoderFrames(s) > 0, 30_000, `${name} encoding`);
  }

  const group = await streamAdaptiveDriver.create(
    {
      kind: 'stream-adaptive',
      key: '1',
      name: 'abr',
      pointer: '/stream-adaptive/0',
      spec: {
        id: 1,
        'stream-name': 'abr',
        streams: LADDER_RENDITIONS.map(([id]) => id),
        'display-name': '',
        note: '',
        ...ott,
      },
    } as unknown as Resource<never>,
    host,
  );
  t.teardown(() => group.close());
  return { base, host, group, streams };
}

const FRAME_TICKS = 90_000 / 25;

/** First video packet of a segment: its PTS and whether it is a key frame. */
async function firstVideo(url: string): Promise<{ pts: number; key: boolean }> {
  const args = ['-v', 'error', '-select_streams', 'v:0', '-show_entries', 'packet=pts,flags'];
  args.push('-read_intervals', '%+#1', '-of', 'csv=p=0', url);
  const out = await new Promise<string>((resolve, reject) => {
    const p = spawn('ffprobe', args, { stdio: ['ignore', 'pipe', 'pipe'] });
    let s = '';
    p.stdout.on('data', (d) => (s += d));
    p.on('close', (code) => (code === 0 ? resolve(s) : reject(new Error(`ffprobe ${code}`))));
  });
  const [pts, flags] = (out.split('\n').find((l) => l.trim()) ?? '').split(',');
  return { pts: Number(pts), key: (flags ?? '').startsWith('K') };
}

/** Segment URLs of a media playlist. */
async function segments(url: string): Promise<string[]> {
  const r = await fetch(url);
  if (!r.ok) return [];
  const text = await r.text();
  return text
    .split('\n')
    .filter((l) => l && !l.startsWith('#'))
    .map((l) => new URL(l, url).href);
}

/**
 * Once every rendition's HLS-TS media playlist lists `want` segments: each segment opens on a
 * key frame, and over the span all renditions cover the segment starts are the same PTS (within
 * a frame) on the source's grid of LADDER_SEGMENT_S. Returns the common boundaries (PTS, 90 kHz).
 */
export async function checkAlignedSegments(
  t: Test,
  ladder: Ladder,
  want: number,
): Promise<number[]> {
  const { base, group } = ladder;
  const playlists = LADDER_RENDITIONS.map(([, name]) => `${base}/abr/${name}/ts.m3u8`);
  await waitFor(
    async () => {
      for (const p of playlists) if ((await segments(p)).length < want) return false;
      return true;
    },
    40_000,
    `${want} segments in every rendition`,
  ).catch(async (err) => {
    const seen = await Promise.all(
      playlists.map(async (p) => `${p}: ${(await fetch(p)).status} ${(await segments(p)).length}`),
    );
    throw new Error(
      `${(err as Error).message}\n${seen.join('\n')}\n${JSON.stringify(group.status())}`,
    );
  });
  const starts: number[][] = [];
  for (const p of playlists) {
    const firsts = await Promise.all((await segments(p)).map(firstVideo));
    const name = p.split('/').at(-2);
    t.ok(
      firsts.every((f) => f.key),
      `${name}: every segment starts with a key frame`,
    );
    starts.push(firsts.map((f) => f.pts));
  }
  // Over the span every rendition covers, the segment starts are the same PTS (within a frame).
  const from = Math.max(...starts.map((s) => s[0]!));
  const to = Math.min(...starts.map((s) => s.at(-1)!));
  t.ok(to > from, `the renditions overlap (${from}..${to})`);
  const within = starts.map((s) => s.filter((x) => x >= from && x <= to));
  t.ok(within[0]!.length >= 2, `${within[0]!.length} common boundaries`);
  for (const [i, s] of within.entries()) {
    const name = LADDER_RENDITIONS[i]![1];
    t.equal(s.length, within[0]!.length, `${name}: as many boundaries`);
    for (const [k, x] of s.entries())
      t.ok(
        Math.abs(x - within[0]![k]!) <= FRAME_TICKS,
        `${name}: boundary ${k} at ${x} (hi: ${within[0]![k]})`,
      );
  }
  t.ok(
    within[0]!.every((x) => x % (LADDER_SEGMENT_S * 90_000) < FRAME_TICKS),
    'boundaries on the source GOP grid',
  );
  return within[0]!;
}
