// Archive playback of an adaptive group through the real server (`bin/sluice.js serve`): a
// storage, two `test`-input members recording into it and a third member without a storage;
// `t=0` on the group's HLS-TS master, CMAF master and DASH manifest combines the two archives
// (ffprobe reads both qualities from the closed documents) and leaves the third out (spec 3
// rule 7), while the live master still lists all three.
import { join } from 'node:path';
import t from 'tap';
import { ffprobeJson } from '../helpers/ott.ts';
import { startServer, tempDir, waitFor } from '../helpers/server.ts';

const SEGMENT_S = 1;
/** Archived seconds each recording member needs before the archive is played. */
const MIN_ARCHIVED_S = 3;
const RECORD_TIMEOUT_MS = 60_000;

const stream = (id: number, name: string, width: number, height: number, storage: number) => ({
  id,
  'stream-name': name,
  pause: false,
  'ott-hls': 3,
  'ott-segment-duration': SEGMENT_S,
  'dvr-storage': storage,
  input: [
    {
      type: 'test',
      width,
      height,
      'frame-rate': 25,
      'gop-interval': 25,
      'video-bitrate': 200,
      'enable-overlay': false,
    },
  ],
});

interface Probe {
  streams: { codec_type: string; width?: number }[];
}

interface StorageStatus {
  streams: { name: string; 'archived-sec': number }[];
}

const widths = (p: Probe) =>
  p.streams
    .filter((s) => s.codec_type === 'video')
    .map((s) => s.width)
    .sort((a, b) => (a ?? 0) - (b ?? 0));

t.test('archive playback on an adaptive group', async (t) => {
  const dir = await tempDir(t, 'sluice-abr-dvr-');
  const srv = await startServer(t, {
    config: {
      'dvr-storage-list': {
        storage: [
          {
            id: 1,
            name: 'disk',
            'dir-path': join(dir, 'store'),
            'disk-emergency-bytes': 1_048_576,
          },
        ],
      },
      stream: [
        stream(1, 'lo', 320, 180, 1),
        stream(2, 'hi', 640, 360, 1),
        stream(3, 'tiny', 160, 90, 0),
      ],
      'stream-adaptive': [
        {
          id: 1,
          'stream-name': 'abr',
          streams: [1, 2, 3],
          'ott-hls': 3,
          'ott-segment-duration': SEGMENT_S,
        },
      ],
    },
  });
  const get = (p: string) => fetch(`${srv.url}${p}`, { signal: AbortSignal.timeout(10_000) });
  await waitFor(
    `${MIN_ARCHIVED_S} s archived by both recording members`,
    async () => {
      const list = (await (await get('/data/dvr-storage-list')).json()) as StorageStatus[];
      const secs = (n: string) => list[0]?.streams.find((x) => x.name === n)?.['archived-sec'] ?? 0;
      return secs('lo') >= MIN_ARCHIVED_S && secs('hi') >= MIN_ARCHIVED_S ? true : undefined;
    },
    RECORD_TIMEOUT_MS,
  ).catch((err: Error) => {
    throw new Error(`${err.message}\n${srv.output()}`);
  });

  await t.test('the live master lists all three members', async (t) => {
    const live = await waitFor(
      'three live variants',
      async () => {
        const r = await get('/abr/cmaf.m3u8');
        const text = r.ok ? await r.text() : '';
        return (text.match(/#EXT-X-STREAM-INF/g)?.length ?? 0) === 3 ? text : undefined;
      },
      RECORD_TIMEOUT_MS,
    );
    t.match(live, /tiny\//);
  });

  await t.test('HLS-TS archive master: the two recording members, closed', async (t) => {
    const r = await get('/abr/index.m3u8?t=0');
    t.equal(r.status, 200);
    const text = await r.text();
    t.equal(text.match(/#EXT-X-STREAM-INF/g)?.length, 2, 'two variants');
    t.notMatch(text, /tiny/, 'the member without a storage is left out');
    t.match(text, /lo\/ts\.m3u8\?t=[\d.]+&d=[\d.]+/, 'member playlists carry the window');
    const media = await (await get(`/abr/${/^lo\/ts\.m3u8\?.*$/m.exec(text)![0]}`)).text();
    t.match(media, /#EXT-X-PLAYLIST-TYPE:VOD/);
    t.match(media, /#EXT-X-ENDLIST/);
    const probe = (await ffprobeJson(`${srv.url}/abr/index.m3u8?t=0`)) as unknown as Probe;
    t.same(widths(probe), [320, 640], 'ffprobe reads both qualities from the archive');
  });

  await t.test('CMAF archive master and DASH manifest', async (t) => {
    const master = await (await get('/abr/cmaf.m3u8?t=0')).text();
    t.equal(master.match(/#EXT-X-STREAM-INF/g)?.length, 2, 'two variants');
    t.notMatch(master, /tiny/);
    t.match(master, /#EXT-X-MEDIA:TYPE=AUDIO/, 'audio from one member, shared');
    const probe = (await ffprobeJson(`${srv.url}/abr/cmaf.m3u8?t=0`)) as unknown as Probe;
    t.same(widths(probe), [320, 640], 'ffprobe reads both fMP4 qualities');
    const mpd = await (await get('/abr/index.mpd?t=0')).text();
    t.match(mpd, /type="static"/);
    const firstPeriod = mpd.split('<Period')[1] ?? '';
    t.equal(
      firstPeriod.match(/<Representation[^>]*codecs="avc1/g)?.length,
      2,
      'a Representation per quality in the Period',
    );
    const dash = (await ffprobeJson(`${srv.url}/abr/index.mpd?t=0`)) as unknown as Probe;
    t.same(widths(dash), [320, 640], 'ffprobe reads both DASH qualities');
  });

  await t.test('a window in the future is an empty closed playlist', async (t) => {
    const future = Math.floor(Date.now() / 1000) + 3600;
    const text = await (await get(`/abr/cmaf.m3u8?t=${future}`)).text();
    t.match(text, /#EXT-X-ENDLIST/);
    t.notMatch(text, /#EXT-X-STREAM-INF/);
  });
});
