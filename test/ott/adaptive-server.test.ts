// An adaptive group through the real server (`bin/sluice.js serve`): two `test`-input streams
// with aligned GOPs (same frame rate and GOP interval, different picture sizes) and a
// `stream-adaptive` group listing both; ffprobe reads the group's HLS master and DASH manifest
// with both variants, and the group reports both members running.
import t from 'tap';
import { ffprobeJson } from '../helpers/ott.ts';
import { startServer, waitFor } from '../helpers/server.ts';

const SEGMENT_S = 1;
const START_TIMEOUT_MS = 40_000;

const stream = (id: number, name: string, width: number, height: number) => ({
  id,
  'stream-name': name,
  pause: false,
  'ott-hls': 3,
  'ott-segment-duration': SEGMENT_S,
  input: [
    {
      type: 'test',
      width,
      height,
      'frame-rate': 25,
      'gop-interval': 25,
      'video-bitrate': 300,
      'enable-overlay': false,
    },
  ],
});

interface Probe {
  streams: { codec_type: string; width?: number }[];
}

t.test('stream-adaptive group over two test streams', async (t) => {
  const srv = await startServer(t, {
    config: {
      stream: [stream(1, 'lo', 320, 180), stream(2, 'hi', 640, 360)],
      'stream-adaptive': [
        {
          id: 1,
          'stream-name': 'abr',
          streams: [1, 2],
          'ott-hls': 3,
          'ott-segment-duration': SEGMENT_S,
        },
      ],
    },
  });
  const status = async () => {
    const r = await fetch(`${srv.url}/data/status`);
    return r.ok ? JSON.stringify(await r.json()) : '';
  };
  // Both members must have packaged a few segments before the group's documents are full.
  const both =
    /RESOLUTION=320x180[\s\S]*RESOLUTION=640x360|RESOLUTION=640x360[\s\S]*RESOLUTION=320x180/;
  await waitFor(
    'both variants in the group masters and two segments each',
    async () => {
      for (const path of ['index.m3u8', 'cmaf.m3u8']) {
        const r = await fetch(`${srv.url}/abr/${path}`);
        if (!r.ok || !both.test(await r.text())) return undefined;
      }
      for (const m of ['lo', 'hi']) {
        const r = await fetch(`${srv.url}/abr/${m}/ts.m3u8`);
        if (!r.ok || ((await r.text()).match(/#EXTINF/g)?.length ?? 0) < 2) return undefined;
      }
      return true;
    },
    START_TIMEOUT_MS,
  ).catch(async (err) => {
    throw new Error(`${(err as Error).message}\nstatus: ${await status()}\n${srv.output()}`);
  });

  const widths = (p: Probe) =>
    p.streams
      .filter((s) => s.codec_type === 'video')
      .map((s) => s.width)
      .sort((a, b) => (a ?? 0) - (b ?? 0));

  const ts = (await ffprobeJson(`${srv.url}/abr/index.m3u8`)) as unknown as Probe;
  t.same(widths(ts), [320, 640], 'ffprobe: HLS-TS master has both variants');
  t.ok(
    ts.streams.some((s) => s.codec_type === 'audio'),
    'HLS-TS: audio',
  );
  const cmaf = (await ffprobeJson(`${srv.url}/abr/cmaf.m3u8`)) as unknown as Probe;
  t.same(widths(cmaf), [320, 640], 'ffprobe: CMAF master has both variants');
  const mpd = await (await fetch(`${srv.url}/abr/index.mpd`)).text();
  t.equal(mpd.match(/<Period/g)?.length, 1, 'DASH: one Period');
  t.equal(
    mpd.match(/<Representation[^>]*codecs="avc1/g)?.length,
    2,
    'DASH: a Representation per quality',
  );
  const dash = (await ffprobeJson(`${srv.url}/abr/index.mpd`)) as unknown as Probe;
  t.same(widths(dash), [320, 640], 'ffprobe: DASH has both qualities');
  t.match(await status(), /abr/, 'the group is in /data/status');
});
