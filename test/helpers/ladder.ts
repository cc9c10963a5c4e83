// An adaptive ladder for tests (docs/transcoder.md "Adaptive ladders"): one tiny test-generator
// source, three `transcoder` streams of it at different sizes and bitrates, opened one after the
// other (each once the previous encoder has produced frames, so every encoder starts at a
// different moment of the source), and a `stream-adaptive` group `abr` over them.
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
}

function encoderFrames(s: StreamInstance): number {
  const { inputs } = s.status() as unknown as {
    inputs: { transport?: { encoder?: { frames: number } } }[];
  };
  return inputs[0]?.transport?.encoder?.frames ?? 0;
}

/** The ladder with `ott-hls` = `ottHls` on every rendition and on the group (1 s segments). */
export async function startLadder(t: TapLike, ottHls: 1 | 2 | 3 = 1): Promise<Ladder> {
  const dir = tempDir(t, 'sluice-ladder-');
  const host = makeHost(dir);
  host.services.set(OTT_FACTORY_SERVICE, createOttService);
  const base = await httpFor(t, host.router);
  const { open: stream } = streamSet(t, host);
  const ott = { 'ott-hls': ottHls, 'ott-segment-duration': LADDER_SEGMENT_S, 'ott-window': 10 };

  await stream({
    id: 1,
    'stream-name': 'src',
    input: [
      {
        type: 'test',
        width: 320,
        height: 180,
        'frame-rate': 25,
        'gop-interval': 50,
        'video-bitrate': 300,
        'enable-overlay': false,
        'audio-enc': 0,
      },
    ],
  });
  for (const [id, name, enc] of LADDER_RENDITIONS) {
    const s = await stream({
      id,
      'stream-name': name,
      ...ott,
      input: [
        {
          type: 'transcoder',
          'decoder-id': 1,
          'enc-gop-interval': LADDER_GOP,
          'enc-speed-preset': 7,
          'enc-bframe': 2,
          'enc-aud-bitrate': 64,
          'enc-aud-rule-mpeg': 'aac',
          ...enc,
        },
      ],
    });
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
  return { base, host, group };
}
