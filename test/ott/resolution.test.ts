// A resolution change mid-stream without a splice (the encoder switches from 320x180 to
// 640x360 on a keyframe, timestamps continuing): the packager closes the run, marks the next
// segment discontinuous and writes a new init segment under a new URI; playlists name it with
// a second EXT-X-MAP, DASH starts a new Period with it, and ffprobe reads each init with its
// own segments at the right size.
import { execFile } from 'node:child_process';
import { readFile, writeFile } from 'node:fs/promises';
import { promisify } from 'node:util';
import pino from 'pino';
import t from 'tap';
import { createOttService } from '../../src/ott/index.ts';
import type { StreamOttService } from '../../src/ott/service.ts';
import { ManualClock } from '../../src/util/clock.ts';
import {
  makeTestStream,
  startOttServer,
  TinyBus,
  tempDir,
  testStreamArgs,
} from '../helpers/ott.ts';

const run = promisify(execFile);
const FIRST_S = 4;

async function width(file: string): Promise<number> {
  const { stdout } = await run('ffprobe', [
    ...['-v', 'error', '-select_streams', 'v', '-show_entries', 'stream=width'],
    ...['-of', 'csv=p=0', file],
  ]);
  return Number(stdout.trim());
}

t.test('a resolution change gives a discontinuity and a new init segment', async (t) => {
  const tmp = tempDir();
  t.teardown(tmp.remove);
  const small = await makeTestStream(`${tmp.dir}/a.ts`, { seconds: FIRST_S, gop: 25 });
  // Same PIDs and codecs, bigger picture, timestamps continuing where the first clip ends.
  const bigFile = `${tmp.dir}/b.ts`;
  const bigArgs = testStreamArgs({ seconds: 4, gop: 25, offset: FIRST_S }).map((a) =>
    a.startsWith('testsrc2=size=320x180') ? a.replace('320x180', '640x360') : a,
  );
  await run('ffmpeg', ['-y', ...bigArgs, bigFile]);
  const big = await readFile(bigFile);

  const clock = new ManualClock();
  const bus = new TinyBus();
  const svc = createOttService({
    name: 'res',
    spec: { 'ott-hls': 3, 'ott-segment-duration': 1, 'ott-window': 20 },
    bus,
    clock,
    log: pino({ level: 'silent' }),
  }) as StreamOttService;
  t.teardown(() => svc.close());
  bus.push(small);
  bus.push(big);
  svc.packager.end();
  const { app, base } = await startOttServer(new Map([['res', svc]]));
  t.teardown(() => app.close());
  const get = async (p: string) => {
    const r = await fetch(`${base}/res/${p}`);
    t.equal(r.status, 200, `GET ${p}`);
    return Buffer.from(await r.arrayBuffer());
  };

  const video = svc.packager.renditions.find((r) => r.track.type === 'video')!;
  const segs = video.store.all();
  const at = segs.findIndex((s) => s.map === 'init-1.mp4');
  t.ok(at > 0, `segments from ${segs[at]?.seq} use init-1.mp4`);
  t.ok(segs[at]?.discontinuity, 'the first of them is discontinuous');
  t.ok(
    segs.slice(0, at).every((s) => (s.map ?? 'init.mp4') === 'init.mp4'),
    'earlier segments keep init.mp4',
  );

  const playlist = (await get(`${video.id}/index.m3u8`)).toString();
  t.match(
    playlist,
    /#EXT-X-MAP:URI="init\.mp4"[\s\S]*#EXT-X-DISCONTINUITY\n#EXT-X-MAP:URI="init-1\.mp4"/,
  );
  const ts = (await get('ts.m3u8')).toString();
  t.match(ts, /#EXT-X-DISCONTINUITY/, 'HLS over TS marks the change too');
  const mpd = (await get('index.mpd')).toString();
  t.ok((mpd.match(/<Period/g)?.length ?? 0) >= 2, 'DASH: a new Period');
  t.match(mpd, /init-1\.mp4/, 'DASH: the new Period names the new init');

  const before = segs[at - 1]!;
  const after = segs[at]!;
  const f1 = `${tmp.dir}/before.mp4`;
  const f2 = `${tmp.dir}/after.mp4`;
  await writeFile(
    f1,
    Buffer.concat([await get(`${video.id}/init.mp4`), await get(`${video.id}/${before.uri}`)]),
  );
  await writeFile(
    f2,
    Buffer.concat([await get(`${video.id}/init-1.mp4`), await get(`${video.id}/${after.uri}`)]),
  );
  t.equal(await width(f1), 320, 'the old init with the old segments: 320 wide');
  t.equal(await width(f2), 640, 'the new init with the new segments: 640 wide');
  const master = (await get('cmaf.m3u8')).toString();
  t.match(master, /RESOLUTION=640x360/, 'the master announces the new size');
});
