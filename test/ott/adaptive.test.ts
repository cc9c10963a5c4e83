// Adaptive group: two renditions of one source (320x180 and 640x360, aligned 1 s GOPs, two
// audio languages) packaged by two stream services, the second joining mid-stream; the group
// cuts both on the same PTS grid, and ffprobe reads the group's HLS master and DASH manifest.
import { execFile } from 'node:child_process';
import { readFile } from 'node:fs/promises';
import { promisify } from 'node:util';
import pino from 'pino';
import t from 'tap';
import { AdaptiveGroup } from '../../src/ott/adaptive.ts';
import { createOttService } from '../../src/ott/index.ts';
import type { StreamOttService } from '../../src/ott/service.ts';
import type { OttService } from '../../src/ott/types.ts';
import { ManualClock } from '../../src/util/clock.ts';
import { ffprobeJson, startOttServer, TinyBus, tempDir, testStreamArgs } from '../helpers/ott.ts';

const run = promisify(execFile);

async function rendition(file: string, size: string, rate: string): Promise<Buffer> {
  const args = testStreamArgs({ seconds: 16, gop: 25, twoAudio: true }).map((a) =>
    a.replace('size=320x180', `size=${size}`).replace('600k', rate),
  );
  await run('ffmpeg', ['-y', ...args, file], { maxBuffer: 1 << 26 });
  return readFile(file);
}

t.test('adaptive group of two renditions', async (t) => {
  const tmp = tempDir();
  t.teardown(tmp.remove);
  const [low, high] = await Promise.all([
    rendition(`${tmp.dir}/low.ts`, '320x180', '400k'),
    rendition(`${tmp.dir}/high.ts`, '640x360', '1200k'),
  ]);
  const clock = new ManualClock();
  const spec = { 'ott-hls': 2, 'ott-segment-duration': 2, 'ott-window': 10 };
  const make = (name: string) => {
    const bus = new TinyBus();
    const svc = createOttService({
      name,
      spec,
      bus,
      clock,
      log: pino({ level: 'silent' }),
    }) as StreamOttService;
    t.teardown(() => svc.close());
    return { bus, svc };
  };
  const a = make('grp-low');
  const b = make('grp-high');
  const group = new AdaptiveGroup({
    name: 'grp',
    mode: 2,
    segmentDuration: 2,
    window: 10,
    clock,
    members: () => [
      { name: 'grp-low', svc: a.svc },
      { name: 'grp-high', svc: b.svc },
    ],
  });
  group.members(); // switches grid alignment on before any packet
  a.bus.push(low);
  // The second rendition joins 5.3 s late, mid-GOP: it must still cut where the first does.
  const join = Math.floor((high.length * 5.3) / 16 / 188) * 188;
  b.bus.push(high.subarray(join));
  const services = new Map<string, OttService>([
    ['grp', { handle: (q, r, rest) => group.handle(q, r, rest) } as OttService],
  ]);
  const { app, base } = await startOttServer(services);
  t.teardown(() => app.close());

  t.test('segment boundaries are aligned by PTS', async (t) => {
    const starts = (s: StreamOttService) =>
      s.packager.renditions
        .find((r) => r.track.type === 'video')!
        .store.all()
        .map((x) => x.start);
    const sa = starts(a.svc);
    const sb = starts(b.svc);
    t.ok(sb.length >= 3, `${sb.length} segments in the late rendition`);
    for (const x of sb.slice(1)) t.ok(sa.includes(x), `boundary ${x / 90000} s is in both`);
  });

  t.test('HLS master lists both variants and both audio languages', async (t) => {
    const text = await (await fetch(`${base}/grp/index.m3u8`)).text();
    t.match(text, /RESOLUTION=320x180/);
    t.match(text, /RESOLUTION=640x360/);
    t.match(text, /TYPE=AUDIO.*LANGUAGE="eng"/);
    t.match(text, /TYPE=AUDIO.*LANGUAGE="fra"/);
    const info = (await ffprobeJson(`${base}/grp/index.m3u8`)) as {
      streams: { codec_name: string; width?: number }[];
    };
    const widths = info.streams.filter((s) => s.codec_name === 'h264').map((s) => s.width);
    t.same([...new Set(widths)].sort(), [320, 640]);
    t.ok(info.streams.filter((s) => s.codec_name === 'aac').length >= 2, 'two audio tracks');
  });

  t.test('DASH: one Period, a Representation per quality', async (t) => {
    const mpd = await (await fetch(`${base}/grp/index.mpd`)).text();
    t.equal((mpd.match(/<Period /g) ?? []).length, 1);
    const video = /<AdaptationSet [^>]*contentType="video".*?<\/AdaptationSet>/.exec(mpd)![0];
    t.equal((video.match(/<Representation /g) ?? []).length, 2);
    t.match(mpd, /lang="fra"/);
    const info = (await ffprobeJson(`${base}/grp/index.mpd`)) as {
      streams: { codec_name: string; width?: number }[];
    };
    const widths = info.streams.filter((s) => s.codec_name === 'h264').map((s) => s.width);
    t.same([...new Set(widths)].sort(), [320, 640]);
  });
});
