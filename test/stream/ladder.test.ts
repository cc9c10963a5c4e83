// Adaptive ladder (test/helpers/ladder.ts: one test source, three `transcoder` renditions of it
// started at different moments, a `stream-adaptive` group over them) with HLS-TS. The three media
// playlists must cut at the same source PTS (segment start PTS read from each segment's first
// video packet by ffprobe), and every segment of every rendition must begin with a key frame
// (docs/transcoder.md "Adaptive ladders").
import { spawn } from 'node:child_process';
import t from 'tap';
import {
  LADDER_RENDITIONS as renditions,
  LADDER_SEGMENT_S as SEGMENT_S,
  startLadder,
} from '../helpers/ladder.ts';
import { waitFor } from '../helpers/stream-host.ts';

const WANT_SEGMENTS = 4;
const FRAME_TICKS = 90_000 / 25;

const { base, group } = await startLadder(t, 1);

/** First video packet of a segment: its PTS and whether it is a key frame. */
async function firstVideo(url: string): Promise<{ pts: number; key: boolean }> {
  const args = ['-v', 'error', '-select_streams', 'v:0', '-show_entries', 'packet=pts,flags'];
  args.push('-read_intervals', '%+#1', '-of', 'csv=p=0', url);
  const out = await new Promise<string>((resolve, reject) => {
    const p = spawn('ffprobe', args, { stdio: ['ignore', 'pipe', 'pipe'] });
    let s = '';
    p.stdout.on('data', (d) => (s += d));
    p.on('close', (code) => (code === 0 ? resolve(s) : reject(new Error(`ffprobe ${code}`))));
  });
  const [pts, flags] = (out.split('\n').find((l) => l.trim()) ?? '').split(',');
  return { pts: Number(pts), key: (flags ?? '').startsWith('K') };
}

/** Segment URLs of a media playlist. */
async function segments(url: string): Promise<string[]> {
  const r = await fetch(url);
  if (!r.ok) return [];
  const text = await r.text();
  return text
    .split('\n')
    .filter((l) => l && !l.startsWith('#'))
    .map((l) => new URL(l, url).href);
}

t.test('three renditions cut at the same PTS, each segment opens on a key frame', async (t) => {
  const playlists = renditions.map(([, name]) => `${base}/abr/${name}/ts.m3u8`);
  await waitFor(
    async () => {
      for (const p of playlists) if ((await segments(p)).length < WANT_SEGMENTS) return false;
      return true;
    },
    40_000,
    `${WANT_SEGMENTS} segments in every rendition`,
  ).catch(async (err) => {
    const seen = await Promise.all(
      playlists.map(async (p) => `${p}: ${(await fetch(p)).status} ${(await segments(p)).length}`),
    );
    throw new Error(
      `${(err as Error).message}\n${seen.join('\n')}\n${JSON.stringify(group.status())}`,
    );
  });
  const master = await (await fetch(`${base}/abr/index.m3u8`)).text();
  t.equal(master.match(/#EXT-X-STREAM-INF/g)?.length, 3, 'three variants in the master');

  const starts: number[][] = [];
  for (const p of playlists) {
    const firsts = await Promise.all((await segments(p)).map(firstVideo));
    const name = p.split('/').at(-2);
    t.ok(
      firsts.every((f) => f.key),
      `${name}: every segment starts with a key frame`,
    );
    starts.push(firsts.map((f) => f.pts));
  }
  // Over the span every rendition covers, the segment starts are the same PTS (within a frame).
  const from = Math.max(...starts.map((s) => s[0]!));
  const to = Math.min(...starts.map((s) => s.at(-1)!));
  t.ok(to > from, `the renditions overlap (${from}..${to})`);
  const within = starts.map((s) => s.filter((x) => x >= from && x <= to));
  t.ok(within[0]!.length >= 2, `${within[0]!.length} common boundaries`);
  for (const [i, s] of within.entries()) {
    t.equal(s.length, within[0]!.length, `${renditions[i]![1]}: as many boundaries`);
    for (const [k, x] of s.entries())
      t.ok(
        Math.abs(x - within[0]![k]!) <= FRAME_TICKS,
        `${renditions[i]![1]}: boundary ${k} at ${x} (hi: ${within[0]![k]})`,
      );
  }
  t.ok(
    within[0]!.every((x) => x % (SEGMENT_S * 90_000) < FRAME_TICKS),
    'boundaries on the source GOP grid',
  );
});
