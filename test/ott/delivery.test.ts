// Delivery over a real HTTP server: ffprobe reads HLS over TS, HLS fMP4 and DASH of an
// ffmpeg-made stream (H.264 with B-frames, two AAC languages, PTS wrapping mid-stream); the
// caching, CORS, HEAD, range and 404 rules; LL-HLS blocking reload on an event.
import pino from 'pino';
import t from 'tap';
import { createOttService } from '../../src/ott/index.ts';
import type { StreamOttService } from '../../src/ott/service.ts';
import { ManualClock } from '../../src/util/clock.ts';
import { WatchedClock } from '../helpers/clock.ts';
import { ffprobeJson, makeTestStream, startOttServer, TinyBus, tempDir } from '../helpers/ott.ts';

/** Seconds before the 33-bit PTS wrap at which the test stream starts. */
const WRAP_LEAD_S = 5;
const PTS_WRAP_S = 2 ** 33 / 90000;

t.test('HLS TS, HLS fMP4 and DASH', async (t) => {
  const tmp = tempDir();
  t.teardown(tmp.remove);
  const ts = await makeTestStream(`${tmp.dir}/in.ts`, {
    seconds: 14,
    bframes: true,
    twoAudio: true,
    gop: 50,
    offset: PTS_WRAP_S - WRAP_LEAD_S,
  });
  const clock = new ManualClock();
  const bus = new TinyBus();
  const svc = createOttService({
    name: 'news',
    spec: { 'ott-hls': 3, 'ott-segment-duration': 2, 'ott-window': 3 },
    bus,
    clock,
    log: pino({ level: 'silent' }),
  }) as StreamOttService;
  t.teardown(() => svc.close());
  const half = Math.floor(ts.length / 2 / 188) * 188;
  bus.push(ts.subarray(0, half));
  clock.advance(7000);
  bus.push(ts.subarray(half));
  const { app, base } = await startOttServer(new Map([['news', svc]]));
  t.teardown(() => app.close());
  const url = (p: string) => `${base}/news/${p}`;

  t.test('segments cross the PTS wrap without a discontinuity', async (t) => {
    const text = await (await fetch(url('index.m3u8'))).text();
    t.notMatch(text, /EXT-X-DISCONTINUITY/);
    t.notMatch(text, /EXT-X-ENDLIST|EXT-X-PLAYLIST-TYPE/, 'live playlist has no VOD markers');
    const durations = [...text.matchAll(/#EXTINF:([\d.]+),/g)].map((m) => Number(m[1]));
    t.equal(durations.length, 3, `${durations.length} segments`);
    for (const d of durations) t.ok(Math.abs(d - 2) < 0.01, `segment of ${d} s at a 2 s GOP`);
  });

  for (const [name, path] of [
    ['HLS over TS', 'index.m3u8'],
    ['HLS fMP4', 'cmaf.m3u8'],
    ['DASH', 'index.mpd'],
  ] as const) {
    t.test(`ffprobe reads ${name}`, async (t) => {
      const info = (await ffprobeJson(url(path))) as {
        streams: { codec_name: string; width?: number; tags?: Record<string, string> }[];
      };
      const codecs = info.streams.map((s) => s.codec_name).sort();
      t.ok(codecs.includes('h264'), `video: ${codecs}`);
      t.equal(codecs.filter((c) => c === 'aac').length >= 2, true, 'both audio tracks');
      t.equal(info.streams.find((s) => s.codec_name === 'h264')?.width, 320);
    });
  }

  t.test('decoding a CMAF segment after its init gives no error', async (t) => {
    const { execFile } = await import('node:child_process');
    const { writeFile } = await import('node:fs/promises');
    for (const id of ['c256', 'c257']) {
      const init = Buffer.from(await (await fetch(url(`${id}/init.mp4`))).arrayBuffer());
      const seg = Buffer.from(await (await fetch(url(`${id}/3.m4s`))).arrayBuffer());
      const f = `${tmp.dir}/${id}.mp4`;
      await writeFile(f, Buffer.concat([init, seg]));
      const stderr = await new Promise<string>((resolve, reject) =>
        execFile('ffmpeg', ['-v', 'error', '-i', f, '-f', 'null', '-'], (err, _o, e) =>
          err ? reject(err) : resolve(e),
        ),
      );
      t.equal(stderr, '', `${id}: clean decode`);
    }
  });

  t.test('master playlist describes the stream', async (t) => {
    const text = await (await fetch(url('cmaf.m3u8'))).text();
    t.match(text, /TYPE=AUDIO,GROUP-ID="audio",NAME="eng",LANGUAGE="eng"/);
    t.match(text, /LANGUAGE="fra"/);
    t.match(text, /CODECS="avc1\.4d40[0-9a-f]{2},mp4a\.40\.2"/);
    t.match(text, /RESOLUTION=320x180,FRAME-RATE=25\.000/);
    const one = await (await fetch(url('cmaf.m3u8?a=fra'))).text();
    t.notMatch(one, /LANGUAGE="eng"/, 'a=fra keeps only the French rendition');
    const mpd = await (await fetch(url('index.mpd?a=eng'))).text();
    t.match(mpd, /lang="eng"/);
    t.notMatch(mpd, /lang="fra"/);
    t.match(mpd, /type="dynamic"/);
    t.match(mpd, /UTCTiming/);
    const time = await fetch(url('time'));
    t.equal(new Date(await time.text()).getTime(), clock.now(), 'time endpoint serves the clock');
  });

  t.test('live parameters a, v and m on HLS over TS', async (t) => {
    type Info = { streams: { codec_type: string; tags?: Record<string, string> }[] };
    const fra = (await ffprobeJson(url('index.m3u8?a=fra'))) as unknown as Info;
    const audio = fra.streams.filter((s) => s.codec_type === 'audio');
    t.equal(audio.length, 1, 'a=fra: one audio track');
    t.ok(
      fra.streams.some((s) => s.codec_type === 'video'),
      'video kept',
    );
    const text = await (await fetch(url('ts.m3u8?a=fra&m=2'))).text();
    const segs = text.split('\n').filter((l) => l.startsWith('seg-'));
    t.equal(segs.length, 2, 'm=2: two segments');
    t.ok(
      segs.every((l) => l.endsWith('?a=fra')),
      'segment URIs carry the selection',
    );
    const whole = Buffer.from(await (await fetch(url(segs[0]!.split('?')[0]!))).arrayBuffer());
    const cut = Buffer.from(await (await fetch(url(segs[0]!))).arrayBuffer());
    t.ok(cut.length < whole.length && cut.length % 188 === 0, 'the filtered segment is smaller');
    t.same(
      Buffer.from(await (await fetch(url(segs[0]!))).arrayBuffer()),
      cut,
      'the same bytes again (cached)',
    );
    const seg = (await ffprobeJson(url(segs[0]!))) as unknown as Info;
    t.same(
      seg.streams.filter((s) => s.codec_type === 'audio').map((s) => s.tags?.language),
      ['fra'],
      'the filtered segment (and its rewritten PMT) carries only the French audio',
    );
    const noAudio = (await ffprobeJson(url('ts.m3u8?v=256&a=none'))) as unknown as Info;
    t.same(
      noAudio.streams.map((s) => s.codec_type),
      ['video'],
      'a=none drops every audio track',
    );
    const mpd = await (await fetch(url('index.mpd?m=2'))).text();
    t.match(mpd, /timeShiftBufferDepth="PT4(\.0+)?S"/, 'm=2 limits the DASH window');
  });

  t.test('HTTP rules', async (t) => {
    const pl = await fetch(url('index.m3u8'));
    // Half a target duration, at least 1 s (src/ott/cache-policy.ts).
    t.match(pl.headers.get('cache-control'), /^public, max-age=\d+$/);
    t.equal(pl.headers.get('access-control-allow-origin'), '*');
    t.equal(pl.headers.get('content-type'), 'application/vnd.apple.mpegurl');
    const seg = (await pl.text()).split('\n').find((l) => l.startsWith('seg-'))!;
    const full = Buffer.from(await (await fetch(url(seg))).arrayBuffer());
    const head = await fetch(url(seg), { method: 'HEAD' });
    t.equal(head.status, 200);
    t.equal(Number(head.headers.get('content-length')), full.length);
    t.equal((await head.arrayBuffer()).byteLength, 0, 'HEAD has no body');
    t.match(head.headers.get('cache-control'), /immutable/);
    const part = await fetch(url(seg), { headers: { range: 'bytes=188-375' } });
    t.equal(part.status, 206);
    t.equal(part.headers.get('content-range'), `bytes 188-375/${full.length}`);
    t.same(Buffer.from(await part.arrayBuffer()), full.subarray(188, 376));
    const bad = await fetch(url(seg), { headers: { range: `bytes=${full.length}-` } });
    t.equal(bad.status, 416);
    const gone = await fetch(url('seg-00000000000000000000.ts'));
    t.equal(gone.status, 404);
    t.equal((await fetch(url('c256/0.m4s'))).status, 404, 'a segment that left the window is 404');
    const pre = await fetch(url('index.m3u8'), { method: 'OPTIONS' });
    t.equal(pre.status, 204);
    t.equal((await fetch(url('index.m3u8?t=0'))).status, 404, 'archive needs a DVR storage');
  });
});

t.test('LL-HLS blocking reload waits for the part, bounded by a timeout', async (t) => {
  const tmp = tempDir();
  t.teardown(tmp.remove);
  const ts = await makeTestStream(`${tmp.dir}/in.ts`, { seconds: 6 });
  const clock = new WatchedClock();
  const bus = new TinyBus();
  const svc = createOttService({
    name: 'll',
    spec: { 'ott-hls': 2, 'ott-segment-duration': 1, 'ott-part-duration': 0.5 },
    bus,
    clock,
    log: pino({ level: 'silent' }),
  }) as StreamOttService;
  t.teardown(() => svc.close());
  const cut = Math.floor(ts.length / 2 / 188) * 188;
  bus.push(ts.subarray(0, cut));
  const { app, base } = await startOttServer(new Map([['ll', svc]]));
  t.teardown(() => app.close());
  const video = svc.packager.rendition('c256')!;
  const open = video.store.open!;
  const msn = open.seq;
  const part = open.parts.length; // not there yet
  let answered = false;
  // A held request sets its bound on the service's clock: then it is parked, waiting.
  const held = clock.armed('the blocking request to be held');
  const pending = fetch(`${base}/ll/c256/index.m3u8?_HLS_msn=${msn}&_HLS_part=${part}`).then(
    async (r) => {
      answered = true;
      return { status: r.status, text: await r.text() };
    },
  );
  await held;
  t.equal(answered, false, 'the request is held while the part does not exist');
  bus.push(ts.subarray(cut));
  const res = await pending;
  t.equal(res.status, 200);
  t.match(
    res.text,
    new RegExp(`URI="${msn}\\.${part}\\.m4s"`),
    'the answer lists the awaited part',
  );
  t.match(
    res.text,
    /#EXT-X-SERVER-CONTROL:CAN-BLOCK-RELOAD=YES,PART-HOLD-BACK=1\.500,CAN-SKIP-UNTIL=/,
  );
  t.match(res.text, /#EXT-X-PRELOAD-HINT:TYPE=PART/);
  t.match(
    res.text,
    /#EXT-X-RENDITION-REPORT:URI="\.\.\/c257\/index\.m3u8",LAST-MSN=\d+,LAST-PART=\d+/,
  );

  const edge = video.store.open?.seq ?? video.store.last()!.seq;
  const far = await fetch(`${base}/ll/c256/index.m3u8?_HLS_msn=${edge + 5}`);
  t.equal(far.status, 400, 'too far ahead');
  const heldLater = clock.armed('the second blocking request to be held');
  const later = fetch(`${base}/ll/c256/index.m3u8?_HLS_msn=${edge + 1}&_HLS_part=3`);
  await heldLater;
  clock.advance(10_000);
  t.equal((await later).status, 503, 'gives up after three target durations without input');
});
