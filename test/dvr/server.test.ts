// End to end through the real server (`sluice serve`): a storage and a `test`-input stream
// with HLS + CMAF recording into it; the archive is read back with ffprobe (VOD HLS), the DASH
// form is static, and a PATCH of `dvr-storage: 0` turns archive playback into 404.
import { execFile } from 'node:child_process';
import { join } from 'node:path';
import { promisify } from 'node:util';
import t from 'tap';
import { startServer, tempDir, waitFor } from '../helpers/server.ts';

const run = promisify(execFile);
/** Chunks (TS, 1 s segments) to wait for before playing the archive back. */
const MIN_CHUNKS = 4;
const RECORD_TIMEOUT_MS = 40_000;

interface StorageStatus {
  state: string;
  'archived-bytes': number;
  streams: { name: string; active: boolean; 'archived-sec': number }[];
}

t.test('record a test stream in the real server and play the archive back', async (t) => {
  const dir = await tempDir(t, 'sluice-dvr-e2e-');
  const srv = await startServer(t, {
    config: {
      'dvr-storage-list': {
        storage: [
          {
            id: 1,
            name: 'disk',
            'dir-path': join(dir, 'store'),
            'cleanup-interval-sec': 1,
            'disk-emergency-bytes': 1_048_576,
          },
        ],
      },
      stream: [
        {
          id: 7,
          'stream-name': 'rec',
          pause: false,
          'ott-hls': 3,
          'ott-segment-duration': 1,
          'dvr-storage': 1,
          input: [
            {
              type: 'test',
              width: 320,
              height: 180,
              'video-bitrate': 300,
              'audio-enc': 1,
              'enable-overlay': false,
            },
          ],
        },
      ],
    },
  });
  const get = (p: string) => fetch(`${srv.url}${p}`, { signal: AbortSignal.timeout(10_000) });

  const status = await waitFor(
    'archived chunks in /data/dvr-storage-list',
    async () => {
      const list = (await (await get('/data/dvr-storage-list')).json()) as StorageStatus[];
      const s = list[0]?.streams.find((x) => x.name === 'rec');
      return s && s['archived-sec'] >= MIN_CHUNKS ? list[0] : undefined;
    },
    RECORD_TIMEOUT_MS,
  ).catch((err: Error) => {
    throw new Error(`${err.message}\n${srv.output()}`);
  });
  t.equal(status.state, 'ready');
  t.ok(status['archived-bytes'] > 0, 'archived bytes counted');
  t.ok(status.streams[0]?.active, 'recording is active');

  await t.test('/data/status: the dvr-storage-list container has a driver', async (t) => {
    const body = JSON.stringify(await (await get('/data/status')).json());
    const doc = JSON.parse(body) as Record<string, unknown>;
    const found: { kind?: string; key?: string; state?: string; storages?: unknown }[] = [];
    const visit = (v: unknown): void => {
      if (Array.isArray(v)) for (const x of v) visit(x);
      else if (v && typeof v === 'object') {
        const o = v as Record<string, unknown>;
        if (o['kind'] === 'dvr-storage-list' || o['key'] === 'dvr-storage-list') found.push(o);
        for (const x of Object.values(o)) visit(x);
      }
    };
    visit(doc);
    t.ok(found.length > 0, 'dvr-storage-list is listed');
    t.notMatch(JSON.stringify(found), /pending: no driver/, 'not pending');
    const pending = [...body.matchAll(/"key":"([^"]+)"[^{}]*"pending: no driver"/g)].map(
      (m) => m[1],
    );
    t.comment(`resources still without a driver: ${pending.join(', ') || 'none'}`);
  });

  await t.test('?t=0 on index.m3u8: a VOD playlist ffprobe reads end to end', async (t) => {
    const r1 = await get('/rec/index.m3u8?t=0');
    t.equal(r1.status, 200);
    const body = await r1.text();
    t.match(body, /#EXT-X-PLAYLIST-TYPE:VOD/);
    t.match(body, /#EXT-X-ENDLIST\n$/);
    const r2 = await get('/rec/index.m3u8?t=0');
    t.equal(await r2.text(), body, 'repeated request is byte-identical');
    const segs = body.split('\n').filter((l) => l && !l.startsWith('#'));
    t.ok(segs.length >= MIN_CHUNKS, `${segs.length} segments listed`);
    const { stdout } = await run(
      'ffprobe',
      [
        '-v',
        'error',
        '-count_packets',
        '-show_entries',
        'stream=codec_type,nb_read_packets',
        '-of',
        'json',
        `${srv.url}/rec/index.m3u8?t=0`,
      ],
      { timeout: 30_000 },
    );
    const streams = (
      JSON.parse(stdout) as { streams: { codec_type: string; nb_read_packets: string }[] }
    ).streams;
    const video = streams.find((s) => s.codec_type === 'video');
    t.ok(video, 'video stream found');
    // 25 fps, 1 s chunks: every listed segment was read.
    t.ok(Number(video?.nb_read_packets) >= segs.length * 20, `${video?.nb_read_packets} frames`);
  });

  await t.test('the fMP4 playlist and DASH form are VOD / static', async (t) => {
    const master = await (await get('/rec/cmaf.m3u8?t=0')).text();
    t.match(master, /#EXT-X-STREAM-INF/);
    const mpd = await (await get('/rec/index.mpd?t=0')).text();
    t.match(mpd, /type="static"/);
    t.match(mpd, /mediaPresentationDuration="PT\d/);
    t.notMatch(mpd, /mediaPresentationDuration="PT0\.000S"/, 'not empty');
    t.match(mpd, /\.m4s"/, 'explicit .m4s URLs');
    const { stdout } = await run(
      'ffprobe',
      [
        '-v',
        'error',
        '-show_entries',
        'stream=codec_type',
        '-of',
        'json',
        `${srv.url}/rec/index.mpd?t=0`,
      ],
      { timeout: 30_000 },
    );
    t.match(stdout, /"video"/, 'ffprobe reads the static DASH');
  });

  await t.test('PATCH dvr-storage 0: DVR detached once, then no DVR archive', async (t) => {
    const res = await fetch(`${srv.url}/config/stream/7`, {
      method: 'PATCH',
      headers: { 'content-type': 'application/merge-patch+json' },
      body: JSON.stringify({ 'dvr-storage': 0 }),
      signal: AbortSignal.timeout(10_000),
    });
    t.ok(res.ok, `PATCH answered ${res.status}: ${res.ok ? '' : await res.text()}`);
    // The change restarts the stream: while it comes back the answer is "not running"; the
    // first answer after that tells this client (it played from storage 1) about the detach.
    const seen: string[] = [];
    await waitFor(
      'archive playback refused',
      async () => {
        const r = await get('/rec/index.m3u8?t=0');
        if (r.status !== 404) return undefined;
        const m = ((await r.json()) as { message: string }).message;
        if (seen[seen.length - 1] !== m) seen.push(m);
        return m === 'VOD: no DVR archive' ? m : undefined;
      },
      20_000,
    );
    const after = seen.filter((m) => m !== 'VOD: stream not running');
    t.same(after, ['VOD: DVR detached', 'VOD: no DVR archive'], `answers: ${seen.join(' → ')}`);
    const stat = (await (await get('/data/dvrstat?stream=rec&step=10')).json()) as {
      storages: { streams: { name: string; buckets: { bytes: number }[] }[] }[];
    };
    const rec = stat.storages[0]?.streams.find((s) => s.name === 'rec');
    const bytes = rec?.buckets.reduce((a, b) => a + b.bytes, 0) ?? 0;
    t.ok(bytes > 0, `the chunks stay indexed on disk (${bytes} bytes)`);
  });
});
