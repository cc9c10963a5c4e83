// DVB subtitles → WebVTT by OCR, end to end: text drawn by ffmpeg, coded as EN 300 743 display
// sets in an ffmpeg-made TS, served as live `.vtt` segments whose words match the source.
import { writeFile } from 'node:fs/promises';
import pino from 'pino';
import t from 'tap';
import { createOttService } from '../../src/ott/index.ts';
import type { StreamOttService } from '../../src/ott/service.ts';
import { ManualClock } from '../../src/util/clock.ts';
import {
  codesOf,
  displaySet,
  drawText,
  dvbSubtitlePes,
  subtitlingDescriptor,
  words,
} from '../helpers/dvbsub.ts';
import { makeTestStream, startOttServer, TinyBus, tempDir } from '../helpers/ott.ts';
import { muxPrivatePes } from '../helpers/teletext.ts';

const PID = 0x140;
const PAGE = 2;
const LINES = [
  { at: 1, end: 3.5, text: 'Hello world from the subtitle track' },
  { at: 4, end: 6.5, text: 'The quick brown fox jumps\nover the lazy dog' },
  { at: 7, end: 9, text: 'Seven silver swans swam south' },
];

t.test('DVB subtitles → live WebVTT by OCR', async (t) => {
  const tmp = tempDir();
  t.teardown(tmp.remove);
  const video = await makeTestStream(`${tmp.dir}/v.ts`, { seconds: 11, gop: 25 });
  const pes: { at: number; build: (pts: number) => Buffer }[] = [];
  let version = 0;
  for (const l of LINES) {
    const drawn = await drawText(l.text, 560, l.text.includes('\n') ? 90 : 50);
    const pic = { codes: codesOf(drawn), width: drawn.width, height: drawn.height, x: 80, y: 460 };
    const v = version++;
    pes.push({ at: l.at, build: (pts) => dvbSubtitlePes(displaySet(PAGE, v, pic), pts) });
    const c = version++;
    pes.push({ at: l.end, build: (pts) => dvbSubtitlePes(displaySet(PAGE, c), pts) });
  }
  const { ts, firstVideoPts } = muxPrivatePes(video, {
    pid: PID,
    descriptors: subtitlingDescriptor('eng', PAGE),
    pes,
  });
  await writeFile(`${tmp.dir}/in.ts`, ts);

  const bus = new TinyBus();
  const svc = createOttService({
    name: 'ds',
    spec: { 'ott-hls': 3, 'ott-webvtt': true, 'ott-segment-duration': 2, 'ott-window': 10 },
    bus,
    clock: new ManualClock(),
    log: pino({ level: 'silent' }),
  }) as StreamOttService;
  t.teardown(() => svc.close());
  bus.push(ts);
  await svc.packager.vtt!.settled();
  const { app, base } = await startOttServer(new Map([['ds', svc]]));
  t.teardown(() => app.close());
  const get = async (p: string) => {
    const r = await fetch(`${base}/ds/${p}`);
    t.equal(r.status, 200, `GET ${p}`);
    return r.text();
  };
  const id = `t${PID}p${PAGE}`;

  const master = await get('index.m3u8');
  t.match(master, new RegExp(`TYPE=SUBTITLES,.*LANGUAGE="eng".*URI="${id}/index.m3u8"`));
  const uris = (await get(`${id}/index.m3u8`)).split('\n').filter((l) => l.endsWith('.vtt'));
  const tsUris = (await get('ts.m3u8')).split('\n').filter((l) => l.endsWith('.ts'));
  t.equal(uris.length, tsUris.length, 'one .vtt per media segment');
  const cues: { start: number; text: string }[] = [];
  for (const uri of uris) {
    const body = await get(`${id}/${uri}`);
    const map = /^WEBVTT\nX-TIMESTAMP-MAP=MPEGTS:(\d+),LOCAL:00:00:00\.000\n/.exec(body);
    t.ok(map, `${uri} starts with the mapping`);
    for (const block of body.split('\n\n')) {
      const lines = block.split('\n');
      const i = lines.findIndex((l) => l.includes('-->'));
      if (i < 0) continue;
      const [h, m, s] = lines[i]!.split(' ')[0]!.split(':');
      const secs = Number(h) * 3600 + Number(m) * 60 + Number(s);
      const start = (Number(map![1]) + secs * 90000 - firstVideoPts) / 90000;
      const text = lines.slice(i + 1).join('\n');
      if (!cues.some((c) => c.text === text)) cues.push({ start, text });
    }
  }
  t.equal(cues.length, LINES.length, 'one cue per subtitle');
  let matched = 0;
  let total = 0;
  LINES.forEach((l, i) => {
    const want = words(l.text);
    const got = new Set(words(cues[i]?.text ?? ''));
    total += want.length;
    matched += want.filter((w) => got.has(w)).length;
    t.ok(Math.abs((cues[i]?.start ?? -1) - l.at) < 0.05, `cue ${i} starts at ${l.at}s`);
  });
  const rate = matched / total;
  t.ok(rate >= 0.9, `word match rate ${(rate * 100).toFixed(0)} % ≥ 90 %`);
  t.comment(`OCR cues: ${JSON.stringify(cues.map((c) => c.text))}`);
});
