// Record an ffmpeg test stream through the real OTT packager into a storage, then play the
// archive back over HTTP: VOD playlists read end to end by ffmpeg, byte-identical repeats,
// exact t/d selection, static DASH with a Period per run, aliases, and the 404 bodies.
import { execFile } from 'node:child_process';
import { rmSync } from 'node:fs';
import { join } from 'node:path';
import { promisify } from 'node:util';
import t from 'tap';
import { ArchivedOttService } from '../../src/dvr/attach.ts';
import { statfsProbe } from '../../src/dvr/disk.ts';
import { readStorage } from '../../src/dvr/settings.ts';
import { ArchiveStorage } from '../../src/dvr/storage.ts';
import { silentLogger } from '../../src/log.ts';
import { createOttService } from '../../src/ott/index.ts';
import type { OttService } from '../../src/ott/types.ts';
import type { Host, Instance } from '../../src/reconciler/driver.ts';
import { ManualClock } from '../../src/util/clock.ts';
import { Services } from '../../src/util/services.ts';
import { applied } from '../helpers/desired.ts';
import { makeTestStream, startOttServer, TinyBus } from '../helpers/ott.ts';
import { hookHost, tempDir } from './helpers.ts';

const run = promisify(execFile);
const PIECES_PER_SECOND = 4;
const START = Date.UTC(2026, 2, 1, 10, 0, 0);

async function feed(
  bus: TinyBus,
  clock: ManualClock,
  data: Buffer,
  seconds: number,
): Promise<void> {
  const pieces = seconds * PIECES_PER_SECOND;
  const size = Math.ceil(data.length / pieces / 188) * 188;
  for (let o = 0; o < data.length; o += size) {
    bus.push(data.subarray(o, o + size));
    clock.advance(1000 / PIECES_PER_SECOND);
    await new Promise((r) => setImmediate(r));
  }
}

t.test('archive recording and playback on the live URLs', async (t) => {
  const dir = tempDir(t);
  const clock = new ManualClock(START);
  const storage = new ArchiveStorage(
    readStorage(
      applied('storage', '1', { id: 1, name: 'disk', 'dir-path': join(dir, 'store') }).spec,
    ),
    {
      clock,
      log: silentLogger,
      probe: statfsProbe,
    },
  );
  t.teardown(() => storage.close());
  await storage.start();
  t.equal(storage.state, 'ready');
  const storageInstance = { storage } as unknown as Instance;
  const host: Host = {
    log: silentLogger,
    clock,
    dataDir: dir,
    lookup: <T extends Instance>(kind: string, key: string) =>
      (kind === 'storage' && key === '1' ? storageInstance : undefined) as T | undefined,
    services: new Services(),
  };
  let spec: Record<string, unknown> = {
    'stream-name': 's',
    'ott-hls': 3,
    'ott-segment-duration': 2,
    // A live window shorter than the recording: its first chunks are on disk only.
    'ott-window': 6,
    'dvr-storage': 1,
    'dvr-hours': 24,
  };
  let state = 'running';
  const bus = new TinyBus();
  const inner = createOttService({ name: 's', spec, bus, clock, log: silentLogger });
  const svc = new ArchivedOttService(inner, {
    ...hookHost(host),
    name: 's',
    spec: () => spec,
    state: () => state,
  });
  t.teardown(() => svc.close());
  const other = new ArchivedOttService(
    createOttService({
      name: 'o',
      spec: { 'stream-name': 'o', 'ott-hls': 1 },
      bus: new TinyBus(),
      clock,
      log: silentLogger,
    }),
    {
      ...hookHost(host),
      name: 'o',
      spec: () => ({ 'stream-name': 'o', 'ott-hls': 1 }),
      state: () => 'running',
    },
  );
  t.teardown(() => other.close());
  const services = new Map<string, OttService>([
    ['s', svc],
    ['o', other],
  ]);
  const { app, base } = await startOttServer(services);
  t.teardown(() => app.close());

  const a = await makeTestStream(join(dir, 'a.ts'), { seconds: 12, gop: 25 });
  const b = await makeTestStream(join(dir, 'b.ts'), { seconds: 8, gop: 25, offset: 1000 });
  await feed(bus, clock, a, 12);
  bus.discontinuity('input switch');
  clock.advance(30_000); // a forced gap of 30 s in the recording
  await feed(bus, clock, b, 8);
  await svc.recorder!.settle();
  const index = storage.index!;
  const tsRows = index.range('s', 'ts', 0, Number.MAX_SAFE_INTEGER);
  t.ok(tsRows.length >= 6, `recorded ${tsRows.length} TS chunks`);
  t.ok(
    index.tracks('s').some((x) => x !== 'ts'),
    'CMAF renditions recorded too',
  );
  const get = (path: string) => fetch(`${base}/${path}`);

  await t.test('?t=0: closed VOD playlist, byte-identical twice, read end to end', async (t) => {
    const r1 = await get('s/index.m3u8?t=0');
    t.equal(r1.status, 200);
    const body = await r1.text();
    t.match(body, /#EXT-X-PLAYLIST-TYPE:VOD/);
    t.match(body, /#EXT-X-MEDIA-SEQUENCE:0\n/);
    t.match(body, /#EXT-X-VERSION:6\n/);
    t.match(body, /#EXT-X-ENDLIST\n$/);
    t.match(body, /#EXT-X-DISCONTINUITY/, 'gap marked');
    t.equal((body.match(/#EXTINF/g) ?? []).length, tsRows.length);
    const again = await (await get('s/index.m3u8?t=0')).text();
    t.equal(again, body, 'byte-identical repeat');
    const out = await run(
      'ffmpeg',
      ['-v', 'error', '-i', `${base}/s/index.m3u8?t=0`, '-c', 'copy', '-f', 'null', '-'],
      {
        timeout: 30_000,
      },
    );
    // Across the splice the second source's timestamps restart: ffmpeg's null muxer notes
    // the DTS step there (and only there); every other line would be a real error.
    const other = out.stderr
      .split('\n')
      .filter((l) => l.trim() && !/non monotonically increasing dts/.test(l));
    t.same(other, [], 'ffmpeg read the whole archive without errors');
    const f0 = Math.floor(tsRows[0]!.start_ms / 1000);
    const one = await run('ffmpeg', [
      '-v',
      'error',
      '-i',
      `${base}/s/index.m3u8?t=${f0}&d=12`,
      '-c',
      'copy',
      '-f',
      'null',
      '-',
    ]);
    t.equal(one.stderr.trim(), '', 'the first run reads without a single warning');
    const probe = await run('ffprobe', [
      '-v',
      'error',
      '-of',
      'json',
      '-show_streams',
      `${base}/s/index.m3u8?t=0`,
    ]);
    const streams = (JSON.parse(probe.stdout) as { streams: { codec_type: string }[] }).streams;
    t.ok(
      streams.some((s) => s.codec_type === 'video'),
      'ffprobe sees video',
    );
  });

  await t.test('?t=&d= picks exactly the chunks whose start lies in the window', async (t) => {
    const from = Math.ceil(tsRows[1]!.start_ms / 1000);
    const d = 5;
    const want = tsRows
      .filter((r) => r.start_ms >= from * 1000 && r.start_ms < (from + d) * 1000)
      .map((r) => r.uri);
    t.ok(want.length > 0);
    const body = await (await get(`s/index.m3u8?t=${from}&d=${d}`)).text();
    const got = body.split('\n').filter((l) => l.startsWith('seg-'));
    t.same(got, want);
    const alias = await (await get(`s/archive-${from}-${d}.m3u8`)).text();
    t.equal(alias, body, 'archive-{from}-{duration}.m3u8 is the same window');
    const alias2 = await (await get(`s/index-${from}-${d}.m3u8`)).text();
    t.equal(alias2, body, 'index-{from}-{duration}.m3u8 too');
    const now = await (await get(`s/archive-${from}-now.m3u8`)).text();
    const utc = await (
      await get(`s/index.m3u8?utc=${from}&lutc=${Math.floor(clock.now() / 1000)}`)
    ).text();
    t.equal(utc, now, 'utc/lutc = archive-{from}-now');
  });

  await t.test('clamping and empty windows', async (t) => {
    const before = await (await get('s/index.m3u8?t=1000')).text();
    t.equal(
      (before.match(/#EXTINF/g) ?? []).length,
      tsRows.length,
      't before the archive: served from its start',
    );
    const future = await (
      await get(`s/index.m3u8?t=${Math.floor(clock.now() / 1000) + 3600}`)
    ).text();
    t.notMatch(future, /#EXTINF/);
    t.match(future, /^#EXTM3U\n[\s\S]*#EXT-X-ENDLIST\n$/);
    const mpd = await (await get(`s/index.mpd?t=${Math.floor(clock.now() / 1000) + 3600}`)).text();
    t.match(mpd, /type="static"/);
    t.match(mpd, /mediaPresentationDuration="PT0\.000S"/);
    const early = await (await get('s/index.m3u8?t=1000&d=10')).text();
    t.notMatch(early, /#EXTINF/, 'a window wholly before the archive is empty');
  });

  await t.test('static DASH: one Period per contiguous run, explicit .m4s URLs', async (t) => {
    const mpd = await (await get('s/index.mpd?t=0')).text();
    t.match(mpd, /type="static"/);
    t.equal((mpd.match(/<Period /g) ?? []).length, 2, 'two Periods across the gap');
    const urls = [...mpd.matchAll(/<SegmentURL media="([^"]+)"/g)].map((m) => m[1]!);
    t.ok(urls.length > 0 && urls.every((u) => u.endsWith('.m4s')));
    const init = /<Initialization sourceURL="([^"]+)"/.exec(mpd)![1]!;
    t.equal((await get(`s/${init}`)).status, 200, 'init from the archive');
    const seg = await get(`s/${urls[0]}`);
    t.equal(seg.status, 200);
    t.ok((await seg.arrayBuffer()).byteLength > 0);
    const master = await (await get('s/cmaf.m3u8?t=0')).text();
    t.match(master, /#EXT-X-STREAM-INF/);
    const child = /^(c\d+\/index\.m3u8\?[^\n]+)$/m.exec(master)![1]!;
    const media = await (await get(`s/${child}`)).text();
    t.match(media, /#EXT-X-MAP:URI="dvr-i\d+\/init\.mp4"/);
    t.match(media, /#EXT-X-ENDLIST/);
    const out = await run(
      'ffmpeg',
      ['-v', 'error', '-i', `${base}/s/cmaf.m3u8?t=0`, '-c', 'copy', '-f', 'null', '-'],
      {
        timeout: 30_000,
      },
    );
    t.equal(out.stderr.trim(), '', 'ffmpeg reads the fMP4 archive');
  });

  await t.test('windows to "now" are byte-identical while no chunk arrives', async (t) => {
    for (const path of ['s/cmaf.m3u8?t=0', 's/index.mpd?t=0', 's/archive-1000-now.m3u8']) {
      const first = await (await get(path)).text();
      clock.advance(700); // the clock moves, the archive does not
      t.equal(await (await get(path)).text(), first, path);
    }
  });

  await t.test('a and v select tracks of archived HLS-TS chunks as live', async (t) => {
    const text = await (await get('s/index.m3u8?t=0&a=9999')).text();
    const segs = text.split('\n').filter((l) => l.startsWith('seg-'));
    t.ok(segs.length > 0 && segs.every((l) => l.endsWith('.ts?a=9999')), 'URIs carry a');
    const types = async (url: string) => {
      const out = await run('ffprobe', ['-v', 'error', '-of', 'json', '-show_streams', url]);
      return (JSON.parse(out.stdout) as { streams: { codec_type: string }[] }).streams
        .map((s) => s.codec_type)
        .sort();
    };
    const archived = segs.find((u) => !u.startsWith(tsRows.at(-1)!.uri))!;
    t.same(await types(`${base}/s/${archived}`), ['video'], 'audio dropped from the chunk');
    t.same(
      await types(`${base}/s/${archived.split('?')[0]}`),
      ['audio', 'video'],
      'whole chunk without a selection',
    );
    const noAudio = await run('ffmpeg', [
      ...['-v', 'error', '-i', `${base}/s/index.m3u8?t=0&a=9999`, '-c', 'copy', '-f', 'null'],
      '-',
    ]);
    const errors = noAudio.stderr
      .split('\n')
      .filter((l) => l.trim() && !/non monotonically increasing dts/.test(l));
    t.same(errors, [], 'ffmpeg reads the filtered archive');
  });

  await t.test('a malformed or empty epg is an instant with no event', async (t) => {
    for (const q of ['epg=abc', 'epg=', 'epg=-5']) {
      const r = await get(`s/index.m3u8?${q}`);
      t.equal(r.status, 404, q);
      t.equal(((await r.json()) as { message: string }).message, 'VOD: EPG event not found', q);
    }
  });

  await t.test('segments: past the right edge from live memory, removed ones 404', async (t) => {
    const live = (
      inner as unknown as { packager: { tsStore: { live(): { uri: string }[] } } }
    ).packager.tsStore.live();
    const r = await get(`s/${live[live.length - 1]!.uri}`);
    t.equal(r.status, 200, 'live segment served from memory');
    const gone = tsRows[0]!;
    index.deleteMany([gone.id]);
    rmSync(join(storage.dir, gone.path));
    const r404 = await get(`s/${gone.uri}`);
    t.equal(r404.status, 404);
    t.match(await r404.text(), /segment/);
  });

  await t.test('the four 404 bodies', async (t) => {
    const body = async (path: string) => {
      const r = await get(path);
      t.equal(r.status, 404, path);
      return ((await r.json()) as { message: string }).message;
    };
    t.equal(await body('o/index.m3u8?t=0'), 'VOD: no DVR archive');
    t.equal(await body('s/index.m3u8?epg=1700000000'), 'VOD: EPG event not found');
    state = 'paused';
    t.equal(await body('s/index.m3u8?t=0'), 'VOD: stream not running');
    state = 'running';
    spec = { ...spec, 'dvr-storage': 0 };
    svc.update(spec);
    t.equal(await body('s/index.m3u8?t=0'), 'VOD: DVR detached', 'detached between requests');
    t.equal(await body('s/index.m3u8?t=0'), 'VOD: no DVR archive', 'then simply no archive');
    t.ok(index.range('s', 'ts', 0, Number.MAX_SAFE_INTEGER).length > 0, 'chunks kept on disk');
    storage.state = 'error';
    spec = { ...spec, 'dvr-storage': 1 };
    svc.update(spec);
    t.equal(await body('s/index.m3u8?t=0'), 'VOD: no DVR archive', 'storage in Error');
    storage.state = 'ready';
  });

  t.test('status record', async (t) => {
    const st = storage.status();
    t.equal(st.state, 'ready');
    t.ok(st['total-bytes'] > 0 && st['free-bytes'] > 0);
    const s = st.streams.find((x) => x.name === 's');
    t.ok(s, 'stream attached');
    t.ok(s!['archived-bytes'] > 0);
    t.equal(st['archived-bytes'], s!['archived-bytes']);
    t.ok(s!['storage-gap-percent'] > 0, 'the forced gap shows');
  });
});
