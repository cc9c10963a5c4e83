// DVB subtitles (EN 300 743 bitmaps, read by tesseract) in the archive (spec 3 "Subtitles"): a
// stream carrying them with `ott-webvtt` and a DVR storage archives `.vtt` beside its chunks; in
// archive mode (`?t=`) the master lists the subtitle rendition, its playlist is closed, and the
// `.vtt` segments (HLS: X-TIMESTAMP-MAP first; DASH: without it) hold the OCR'd text at the
// subtitles' times.
import { join } from 'node:path';
import t from 'tap';
import { ArchivedOttService } from '../../src/dvr/attach.ts';
import { silentLogger } from '../../src/log.ts';
import { createOttService } from '../../src/ott/index.ts';
import type { StreamOttService } from '../../src/ott/service.ts';
import {
  codesOf,
  displaySet,
  drawText,
  dvbSubtitlePes,
  subtitlingDescriptor,
  words,
} from '../helpers/dvbsub.ts';
import { makeTestStream, startOttServer, TinyBus } from '../helpers/ott.ts';
import { muxPrivatePes } from '../helpers/teletext.ts';
import { feedPaced, hookHost, recordingHost, tempDir } from './helpers.ts';

const PID = 0x140;
const PAGE = 2;
const SUB = `t${PID}p${PAGE}`;
const SECONDS = 11;
const LINES = [
  { at: 1, end: 3.5, text: 'Archived subtitles read back' },
  { at: 4, end: 6.5, text: 'The quick brown fox jumps\nover the lazy dog' },
  { at: 7, end: 9, text: 'Seven silver swans swam south' },
];

/** The cues of `.vtt` bodies: start (s after the first picture) and text, each text once. */
function cuesOf(bodies: string[], firstVideoPts: number) {
  const cues: { start: number; text: string }[] = [];
  for (const body of bodies) {
    const map = /^WEBVTT\nX-TIMESTAMP-MAP=MPEGTS:(\d+),LOCAL:00:00:00\.000\n/.exec(body);
    const origin = map ? Number(map[1]) : 0;
    for (const block of body.split('\n\n')) {
      const lines = block.split('\n');
      const i = lines.findIndex((l) => l.includes('-->'));
      if (i < 0) continue;
      const [h, m, s] = lines[i]!.split(' ')[0]!.split(':');
      const secs = Number(h) * 3600 + Number(m) * 60 + Number(s);
      const text = lines.slice(i + 1).join('\n');
      if (!cues.some((c) => c.text === text))
        cues.push({ start: (origin + secs * 90_000 - firstVideoPts) / 90_000, text });
    }
  }
  return cues;
}

t.test('DVB subtitles by OCR: archived, served in archive mode', async (t) => {
  const dir = tempDir(t);
  const { clock, storage, host } = await recordingHost(t, dir);
  const spec = {
    'stream-name': 's',
    'ott-hls': 3,
    'ott-webvtt': true,
    'ott-segment-duration': 2,
    'dvr-storage': 1,
  };
  const bus = new TinyBus();
  const inner = createOttService({ name: 's', spec, bus, clock, log: silentLogger });
  const svc = new ArchivedOttService(inner, {
    ...hookHost(host),
    name: 's',
    spec: () => spec,
    state: () => 'running',
    scrambled: () => [],
  });
  t.teardown(() => svc.close());

  const video = await makeTestStream(join(dir, 'v.ts'), { seconds: SECONDS, gop: 25 });
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
  await feedPaced(bus, clock, ts, SECONDS);
  await (inner as StreamOttService).packager.vtt!.settled();
  await svc.recorder!.settle();

  const index = storage.index!;
  const vttRows = index.range('s', SUB, 0, Number.MAX_SAFE_INTEGER);
  t.ok(vttRows.length >= 4, `${vttRows.length} .vtt chunks indexed`);
  t.ok(
    vttRows.every((r) => r.path.endsWith('.vtt')),
    '.vtt files beside the chunks',
  );

  const kinds = index.markers(0, Number.MAX_SAFE_INTEGER, 's').map((m) => `${m.kind}: ${m.detail}`);
  t.ok(kinds.includes(`subtitles: subtitle track ${SUB} recorded`), 'subtitle activity marker');
  t.notOk(
    kinds.some((k) => k.startsWith('pmt-change')),
    `no PMT change marked (${kinds.join('; ')})`,
  );

  const { app, base } = await startOttServer(new Map([['s', svc]]));
  t.teardown(() => app.close());
  const get = async (p: string) => {
    const r = await fetch(`${base}/s/${p}`);
    t.equal(r.status, 200, `GET ${p}`);
    return r.text();
  };
  const master = await get('index.m3u8?t=0');
  t.match(
    master,
    new RegExp(`#EXT-X-MEDIA:TYPE=SUBTITLES,.*LANGUAGE="eng".*URI="${SUB}/index\\.m3u8\\?t=`),
  );
  const subUri = /URI="([^"]+)"/.exec(master)![1]!;
  const subs = await get(subUri);
  t.match(subs, /#EXT-X-PLAYLIST-TYPE:VOD/);
  t.match(subs, /#EXT-X-ENDLIST\n$/, 'a closed subtitle playlist');
  const vtts = subs.split('\n').filter((l) => l.endsWith('.vtt'));
  t.equal(vtts.length, vttRows.length, 'every archived .vtt listed');
  const bodies = await Promise.all(vtts.map((u) => get(`${SUB}/${u}`)));
  for (const b of bodies) t.match(b, /^WEBVTT\nX-TIMESTAMP-MAP=MPEGTS:\d+,LOCAL:00:00:00\.000\n/);

  const cues = cuesOf(bodies, firstVideoPts);
  t.equal(cues.length, LINES.length, 'one cue per subtitle');
  let matched = 0;
  let total = 0;
  LINES.forEach((l, i) => {
    const want = words(l.text);
    const got = new Set(words(cues[i]?.text ?? ''));
    total += want.length;
    matched += want.filter((w) => got.has(w)).length;
    t.ok(Math.abs((cues[i]?.start ?? -1) - l.at) < 0.05, `cue ${i} starts at ${l.at} s`);
  });
  const rate = matched / total;
  t.ok(rate >= 0.9, `word match rate ${(rate * 100).toFixed(0)} % ≥ 90 %`);
  t.comment(`archived OCR cues: ${JSON.stringify(cues.map((c) => c.text))}`);

  const mpd = await get('index.mpd?t=0');
  const dUrl = new RegExp(`media="(${SUB}/dvr-i\\d+/d\\d+\\.vtt)"`).exec(mpd)?.[1];
  t.ok(dUrl, 'DASH lists the d-form .vtt');
  const dBody = await get(dUrl!);
  t.match(dBody, /^WEBVTT/);
  t.notMatch(dBody, /X-TIMESTAMP-MAP/, 'DASH drops X-TIMESTAMP-MAP');
});
