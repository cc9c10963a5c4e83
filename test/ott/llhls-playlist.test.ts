// LL-HLS media playlists of one stream with default settings: video and audio renditions
// share EXT-X-TARGETDURATION and CAN-SKIP-UNTIL (AAC audio segments run a frame longer or
// shorter than the 4 s video segments), and once the window is full a `_HLS_skip=YES` request
// gets a delta update (EXT-X-SKIP) that keeps CAN-SKIP-UNTIL of segments.
import pino from 'pino';
import t from 'tap';
import { createOttService } from '../../src/ott/index.ts';
import { DEFAULT_WINDOW } from '../../src/ott/options.ts';
import type { StreamOttService } from '../../src/ott/service.ts';
import { ManualClock } from '../../src/util/clock.ts';
import { makeTestStream, startOttServer, TinyBus, tempDir } from '../helpers/ott.ts';

const PIECES_PER_SECOND = 4;
/** Default segment length 4 s: enough stream for a full window and then some. */
const STREAM_S = (DEFAULT_WINDOW + 4) * 4;

const tag = (text: string, name: string) => new RegExp(`#${name}:([^\\n]*)`).exec(text)?.[1];
const durations = (text: string) =>
  [...text.matchAll(/#EXTINF:([\d.]+),/g)].map((m) => Number(m[1]));

t.test('LL-HLS renditions agree on target and skip, and delta updates happen', async (t) => {
  const tmp = tempDir();
  t.teardown(tmp.remove);
  const ts = await makeTestStream(`${tmp.dir}/in.ts`, { seconds: STREAM_S, gop: 25 });
  const clock = new ManualClock();
  const bus = new TinyBus();
  const svc = createOttService({
    name: 'll',
    spec: { 'ott-hls': 2 },
    bus,
    clock,
    log: pino({ level: 'silent' }),
  }) as StreamOttService;
  t.teardown(() => svc.close());
  const size = Math.ceil(ts.length / (STREAM_S * PIECES_PER_SECOND) / 188) * 188;
  for (let o = 0; o < ts.length; o += size) {
    bus.push(ts.subarray(o, o + size));
    clock.advance(1000 / PIECES_PER_SECOND);
  }
  const { app, base } = await startOttServer(new Map([['ll', svc]]));
  t.teardown(() => app.close());
  const get = async (p: string) => (await fetch(`${base}/ll/${p}`)).text();

  const master = await get('cmaf.m3u8');
  const video = /^(c\d+\/index\.m3u8)$/m.exec(master)![1]!;
  const audio = /TYPE=AUDIO,[^\n]*URI="(c\d+\/index\.m3u8)"/.exec(master)![1]!;
  const full = { video: await get(video), audio: await get(audio) };
  const target = Number(tag(full.video, 'EXT-X-TARGETDURATION'));
  const control = tag(full.video, 'EXT-X-SERVER-CONTROL')!;
  const until = Number(/CAN-SKIP-UNTIL=([\d.]+)/.exec(control)![1]);
  t.equal(target, 4, 'target duration of 4 s segments is 4');
  t.equal(tag(full.audio, 'EXT-X-TARGETDURATION'), String(target), 'audio has the same target');
  t.equal(tag(full.audio, 'EXT-X-SERVER-CONTROL'), control, 'and the same server control');
  t.ok(until >= 6 * target, `CAN-SKIP-UNTIL ${until} ≥ 6 × target`);
  const audioLengths = durations(full.audio);
  t.ok(
    audioLengths.some((d) => d > 4),
    `audio segments longer than the video's are listed (${audioLengths.join(', ')})`,
  );
  for (const [name, text] of Object.entries(full)) {
    const list = durations(text);
    t.equal(list.length, DEFAULT_WINDOW, `${name}: the default window is full`);
    t.ok(
      list.every((d) => Math.round(d) <= target),
      `${name}: every EXTINF rounds to at most the target`,
    );
    const uri = name === 'video' ? video : audio;
    const delta = await get(`${uri}?_HLS_skip=YES`);
    const skipped = Number(/#EXT-X-SKIP:SKIPPED-SEGMENTS=(\d+)\n/.exec(delta)?.[1] ?? 0);
    t.ok(skipped > 0, `${name}: _HLS_skip=YES skips ${skipped} segments`);
    const kept = durations(delta);
    t.equal(kept.length + skipped, list.length, `${name}: skipped + listed = the full playlist`);
    const keptSeconds = kept.reduce((a, d) => a + d, 0);
    t.ok(keptSeconds >= until, `${name}: ${keptSeconds.toFixed(3)} s kept ≥ CAN-SKIP-UNTIL`);
    t.equal(
      tag(delta, 'EXT-X-MEDIA-SEQUENCE'),
      tag(text, 'EXT-X-MEDIA-SEQUENCE'),
      `${name}: the delta keeps the media sequence of the full playlist`,
    );
  }
});
