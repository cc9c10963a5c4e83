// WebVTT from teletext: pages crafted per EN 300 706 / EN 300 472 muxed into an ffmpeg-made
// TS; the `.vtt` segments served over HTTP carry the source text with colour, position and
// national characters, and ffmpeg's libzvbi decoder reads the same text from the same TS.
import { execFile } from 'node:child_process';
import { writeFile } from 'node:fs/promises';
import { promisify } from 'node:util';
import pino from 'pino';
import t from 'tap';
import { createOttService } from '../../src/ott/index.ts';
import type { StreamOttService } from '../../src/ott/service.ts';
import { ManualClock } from '../../src/util/clock.ts';
import { makeTestStream, startOttServer, TinyBus, tempDir } from '../helpers/ott.ts';
import { BOX, CYAN, DOUBLE, END_BOX, muxTeletext, YELLOW } from '../helpers/teletext.ts';

const run = promisify(execFile);
const PID = 0x130;
const GERMAN = 0b001;

/** What the crafted pages say, in order, as a viewer reads them. */
const EXPECTED = [
  { at: 1, end: 3, text: 'Hello, world!\nSecond <line> & more' },
  { at: 4.5, end: 6, text: 'Grüße aus Köln' },
  { at: 6, end: 8, text: "Un café, s'il vous plaît" },
];

const PAGES = [
  {
    at: 1,
    rows: [
      { row: 20, text: `       ${DOUBLE}${BOX}Hello, world!${END_BOX}` },
      { row: 22, text: `   ${YELLOW}${BOX}Second <line> & more${END_BOX}` },
    ],
  },
  { at: 3, rows: [] },
  { at: 4.5, national: GERMAN, rows: [{ row: 2, text: `${CYAN}${BOX}Grüße aus Köln${END_BOX}` }] },
  {
    at: 6,
    rows: [{ row: 22, text: `${BOX}Un cafe, s'il vous plait${END_BOX}` }],
    // é and î through X/26 (G0 character with diacritical mark: acute, circumflex)
    diacritics: [
      { row: 22, col: 8, code: 0x65, mark: 2 },
      { row: 22, col: 24, code: 0x69, mark: 3 },
    ],
  },
  { at: 8, rows: [] },
];

interface ParsedCue {
  start: number;
  end: number;
  settings: string;
  text: string;
}

function parseVtt(body: string): { mpegts?: number; cues: ParsedCue[] } {
  const map = /X-TIMESTAMP-MAP=MPEGTS:(\d+),LOCAL:00:00:00\.000/.exec(body);
  const secs = (s: string) => {
    const [h, m, rest] = s.split(':');
    return Number(h) * 3600 + Number(m) * 60 + Number(rest);
  };
  const cues: ParsedCue[] = [];
  for (const block of body.split('\n\n')) {
    const lines = block.split('\n');
    const i = lines.findIndex((l) => l.includes('-->'));
    if (i < 0) continue;
    const m = /^(\S+) --> (\S+) ?(.*)$/.exec(lines[i]!)!;
    cues.push({
      start: secs(m[1]!),
      end: secs(m[2]!),
      settings: m[3]!,
      text: lines.slice(i + 1).join('\n'),
    });
  }
  return { mpegts: map ? Number(map[1]) : undefined, cues };
}

function plain(markup: string): string {
  return markup
    .replace(/<[^>]+>/g, '')
    .replace(/&lt;/g, '<')
    .replace(/&gt;/g, '>')
    .replace(/&amp;/g, '&');
}

/** Join pieces of one cue split over segments (end of one = start of the next). */
function merge(cues: ParsedCue[]): ParsedCue[] {
  const out: ParsedCue[] = [];
  for (const c of cues) {
    const last = out[out.length - 1];
    if (last && last.text === c.text && Math.abs(last.end - c.start) < 0.002) last.end = c.end;
    else out.push({ ...c });
  }
  return out;
}

t.test('teletext subtitles → WebVTT segments', async (t) => {
  const tmp = tempDir();
  t.teardown(tmp.remove);
  const video = await makeTestStream(`${tmp.dir}/v.ts`, { seconds: 12, gop: 25 });
  const { ts, firstVideoPts } = muxTeletext(video, {
    pid: PID,
    magazine: 8,
    pageByte: 0x88,
    language: 'eng',
    pages: PAGES,
  });
  await writeFile(`${tmp.dir}/in.ts`, ts);

  const clock = new ManualClock();
  const bus = new TinyBus();
  const svc = createOttService({
    name: 'tt',
    spec: { 'ott-hls': 3, 'ott-webvtt': true, 'ott-segment-duration': 2, 'ott-window': 10 },
    bus,
    clock,
    log: pino({ level: 'silent' }),
  }) as StreamOttService;
  t.teardown(() => svc.close());
  bus.push(ts);
  const { app, base } = await startOttServer(new Map([['tt', svc]]));
  t.teardown(() => app.close());
  const get = async (p: string) => {
    const r = await fetch(`${base}/tt/${p}`);
    t.equal(r.status, 200, `GET ${p}`);
    return r.text();
  };
  const id = `t${PID}p888`;

  t.test('masters announce the subtitles', async (t) => {
    for (const master of ['index.m3u8', 'cmaf.m3u8']) {
      const text = await get(master);
      t.match(
        text,
        new RegExp(
          `#EXT-X-MEDIA:TYPE=SUBTITLES,GROUP-ID="subs",.*LANGUAGE="eng".*URI="${id}/index.m3u8"`,
        ),
      );
      t.match(text, /#EXT-X-STREAM-INF:.*SUBTITLES="subs"/);
    }
    const mpd = await get('index.mpd');
    t.match(mpd, /<AdaptationSet [^>]*contentType="text" mimeType="text\/vtt"[^>]*lang="eng"/);
    t.match(mpd, new RegExp(`media="${id}/d\\$Number\\$\\.vtt"`));
    t.equal(
      await (await fetch(`${base}/tt/index.m3u8?s=none`)).text().then((x) => /SUBTITLES/.test(x)),
      false,
      's=none drops them',
    );
  });

  t.test('cue text, timing, colour and position match the source', async (t) => {
    const playlist = await get(`${id}/index.m3u8`);
    const uris = playlist.split('\n').filter((l) => l.endsWith('.vtt'));
    const tsUris = (await get('ts.m3u8')).split('\n').filter((l) => l.endsWith('.ts'));
    t.equal(uris.length, tsUris.length, 'one .vtt per media segment');
    const all: ParsedCue[] = [];
    for (const uri of uris) {
      const body = await get(`${id}/${uri}`);
      t.ok(body.startsWith('WEBVTT\nX-TIMESTAMP-MAP=MPEGTS:'), `${uri} starts with the mapping`);
      const { mpegts, cues } = parseVtt(body);
      for (const c of cues) {
        const abs = (s: number) => (mpegts! + s * 90000 - firstVideoPts) / 90000;
        all.push({ ...c, start: abs(c.start), end: abs(c.end) });
      }
      const n = uri.replace('.vtt', '');
      const dash = await get(`${id}/d${n}.vtt`);
      t.notMatch(dash, /X-TIMESTAMP-MAP/, 'DASH form has no mapping header');
    }
    const cues = merge(all);
    t.same(
      cues.map((c) => plain(c.text)),
      EXPECTED.map((e) => e.text),
    );
    cues.forEach((c, i) => {
      t.ok(Math.abs(c.start - EXPECTED[i]!.at) < 0.002, `cue ${i} starts at ${c.start}`);
      t.ok(Math.abs(c.end - EXPECTED[i]!.end) < 0.002, `cue ${i} ends at ${c.end}`);
    });
    t.match(cues[0]!.text, '<c.yellow>Second &lt;line&gt; &amp; more</c>');
    t.match(cues[0]!.settings, 'line:80%', 'row 20 of 25');
    t.match(cues[1]!.text, '<c.cyan>Grüße aus Köln</c>');
    t.match(cues[1]!.settings, 'line:8%', 'a top subtitle stays on top');
  });

  t.test('ffmpeg (libzvbi) reads the same text from the same TS', async (t) => {
    const out = `${tmp.dir}/zvbi.vtt`;
    await run('ffmpeg', [
      '-v',
      'error',
      '-txt_format',
      'text',
      '-txt_page',
      '888',
      '-i',
      `${tmp.dir}/in.ts`,
      '-map',
      '0:s:0',
      '-c:s',
      'webvtt',
      '-y',
      out,
    ]);
    const { readFile } = await import('node:fs/promises');
    const theirs = parseVtt(await readFile(out, 'utf8'))
      .cues.map((c) =>
        c.text
          .split('\n')
          .map((l) => l.trim())
          .filter(Boolean)
          .join('\n'),
      )
      .filter(Boolean);
    t.same(
      theirs,
      EXPECTED.map((e) => e.text),
    );
  });
});
