// The same viewer credentials on archive and adaptive URLs (issue 19, item 1): behind a billing
// server, ffprobe reads an archive VOD playlist (`?t=0&token=…`) and an adaptive group's master
// (`/abr/index.m3u8?token=…`) by following the URIs they hand on; without a token both are 401,
// with a refused one 403.
import { execFile } from 'node:child_process';
import { join } from 'node:path';
import { promisify } from 'node:util';
import t from 'tap';
import { startBilling } from '../helpers/billing.ts';
import { startServer, tempDir, waitFor } from '../helpers/server.ts';

const run = promisify(execFile);
const READY_MS = 60_000;

const testStream = (id: number, name: string, width: number, height: number, dvr: number) => ({
  id,
  'stream-name': name,
  pause: false,
  'ott-hls': 1,
  'ott-segment-duration': 1,
  'dvr-storage': dvr,
  input: [
    {
      type: 'test',
      width,
      height,
      'frame-rate': 25,
      'gop-interval': 25,
      'video-bitrate': 300,
      'audio-enc': 1,
      'enable-overlay': false,
    },
  ],
});

t.test('archive and adaptive URLs behind a token', async (t) => {
  const billing = await startBilling((r) => ({
    status: r.query.get('event') !== 'auth' || r.query.get('token') === 'good' ? 200 : 403,
  }));
  t.teardown(billing.close);
  const dir = await tempDir(t, 'sluice-billing-dvr-');
  const srv = await startServer(t, {
    config: {
      cs: {
        'loopback-anonymous': false,
        server: [{ id: 1, name: 'billing', password: 'k', url: billing.url }],
      },
      'dvr-storage-list': { storage: [{ id: 1, name: 'disk', 'dir-path': join(dir, 'store') }] },
      stream: [testStream(1, 'lo', 320, 180, 1), testStream(2, 'hi', 640, 360, 0)],
      'stream-adaptive': [{ id: 1, 'stream-name': 'abr', streams: [1, 2], 'ott-hls': 1 }],
    },
  });
  const url = (p: string) => `${srv.url}/${p}`;
  const probe = async (u: string) =>
    (
      await run('ffprobe', [
        ...['-v', 'error', '-show_entries', 'stream=codec_name,width', '-of', 'csv=p=0', u],
      ])
    ).stdout;

  const vod = await waitFor(
    'three archived chunks',
    async () => {
      const r = await fetch(url('lo/index.m3u8?t=0&token=good'));
      const text = r.ok ? await r.text() : '';
      return (text.match(/#EXTINF/g) ?? []).length >= 3 ? text : undefined;
    },
    READY_MS,
  );
  t.match(vod, /#EXT-X-PLAYLIST-TYPE:VOD/, 'an archive playlist');
  const uris = vod.split('\n').filter((l) => l && !l.startsWith('#'));
  t.ok(uris.length >= 3);
  for (const u of uris) t.match(u, /[?&]token=good$/, `archive URI ${u} carries the token`);
  t.match(await probe(url('lo/index.m3u8?t=0&token=good')), /h264/, 'ffprobe reads the archive');
  t.equal(
    (await fetch(url(`lo/${uris[0]!.split('?')[0]}`))).status,
    401,
    'an archive chunk without a token',
  );
  t.equal((await fetch(url('lo/index.m3u8?t=0'))).status, 401);
  t.equal((await fetch(url('lo/index.m3u8?t=0&token=bad'))).status, 403);

  const master = await waitFor(
    'both variants in the group master',
    async () => {
      const r = await fetch(url('abr/index.m3u8?token=good'));
      const text = r.ok ? await r.text() : '';
      return (text.match(/#EXT-X-STREAM-INF/g) ?? []).length >= 2 ? text : undefined;
    },
    READY_MS,
  );
  for (const u of master.split('\n').filter((l) => l && !l.startsWith('#')))
    t.match(u, /[?&]token=good$/, `variant URI ${u} carries the token`);
  t.match(await probe(url('abr/index.m3u8?token=good')), /h264/, 'ffprobe reads the group');
  t.equal((await fetch(url('abr/index.m3u8'))).status, 401);
  t.equal((await fetch(url('abr/index.m3u8?token=bad'))).status, 403);
  const sessions = (await (await fetch(url('data/sessions'))).json()) as {
    sessions: { stream: string }[];
  };
  t.same(
    [...new Set(sessions.sessions.map((s) => s.stream))].sort(),
    ['abr', 'lo'],
    'a session per name played',
  );
});
