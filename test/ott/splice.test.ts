// CMAF video at a splice: the input goes away at an arbitrary packet, often inside a group of
// B-frames. The last segment before the splice must present exactly its duration with no
// missing frame (ffprobe reads init + segment), and video segments start at the presentation
// time of their first frame (negative composition offsets), so players that map the next run
// by decode time leave no hole.
import { execFile } from 'node:child_process';
import { writeFile } from 'node:fs/promises';
import { promisify } from 'node:util';
import t from 'tap';
import { readSettings } from '../../src/ott/options.ts';
import { Packager } from '../../src/ott/packager.ts';
import { PTS_HZ } from '../../src/ott/timeline.ts';
import { ManualClock } from '../../src/util/clock.ts';
import { makeTestStream, tempDir } from '../helpers/ott.ts';

const run = promisify(execFile);
const FRAME = PTS_HZ / 25;
/** Packets of the first input fed before the switch: different places inside B-frame groups. */
const CUTS = [1000, 1011, 1029, 1055, 1090];

t.test('the last video segment before a splice has no presentation hole', async (t) => {
  const tmp = tempDir();
  t.teardown(tmp.remove);
  const a = await makeTestStream(`${tmp.dir}/a.ts`, { seconds: 6, gop: 25, bframes: true });
  const b = await makeTestStream(`${tmp.dir}/b.ts`, {
    seconds: 3,
    gop: 25,
    bframes: true,
    offset: 1000,
  });
  for (const cut of CUTS) {
    const p = new Packager(
      readSettings({ 'ott-hls': 2, 'ott-segment-duration': 1, 'ott-part-duration': 0.25 }),
      new ManualClock(),
    );
    p.packets(a.subarray(0, cut * 188));
    p.discontinuity();
    p.packets(b);
    p.end();
    const video = p.renditions.find((r) => r.track.type === 'video')!;
    const segs = video.store.all();
    const at = segs.findIndex((s) => s.discontinuity);
    t.ok(at > 0, `cut ${cut}: a splice after segment ${segs[at - 1]?.seq}`);
    const last = segs[at - 1]!;
    const file = `${tmp.dir}/last-${cut}.mp4`;
    await writeFile(file, Buffer.concat([video.store.init!, video.store.get(last.uri)!]));
    const { stdout } = await run('ffprobe', [
      ...['-v', 'error', '-select_streams', 'v', '-show_entries', 'packet=pts,duration'],
      ...['-of', 'csv=p=0', file],
    ]);
    const pts = stdout
      .trim()
      .split('\n')
      .map((l) => Number(l.split(',')[0]))
      .sort((x, y) => x - y);
    const holes = pts.filter((x, i) => i > 0 && x - pts[i - 1]! > FRAME * 1.5);
    t.same(holes, [], `cut ${cut}: every frame between the first and the last shown is there`);
    const shown = (pts[pts.length - 1]! + FRAME - pts[0]!) / PTS_HZ;
    t.ok(
      Math.abs(shown - last.duration) < 0.001,
      `cut ${cut}: shows ${shown.toFixed(2)} s = its duration ${last.duration.toFixed(2)} s`,
    );
  }
});

t.test('a video segment starts at the presentation time of its keyframe', async (t) => {
  const tmp = tempDir();
  t.teardown(tmp.remove);
  const a = await makeTestStream(`${tmp.dir}/a.ts`, { seconds: 4, gop: 25, bframes: true });
  const p = new Packager(
    readSettings({ 'ott-hls': 2, 'ott-segment-duration': 1 }),
    new ManualClock(),
  );
  const starts: number[] = [];
  p.segmenter.addSink({ boundary: (x) => starts.push(x.pts), splice: () => {} });
  p.packets(a);
  p.end();
  const video = p.renditions.find((r) => r.track.type === 'video')!;
  const segs = video.store.all();
  t.ok(segs.length >= 2, `${segs.length} segments`);
  for (const s of segs)
    t.ok(starts.includes(s.start), `segment ${s.seq} starts at boundary PTS ${s.start}`);
});

t.test('every track of a run ends where its video is written to at a splice', async (t) => {
  const tmp = tempDir();
  t.teardown(tmp.remove);
  const a = await makeTestStream(`${tmp.dir}/a.ts`, { seconds: 6, gop: 25, bframes: true });
  const b = await makeTestStream(`${tmp.dir}/b.ts`, { seconds: 3, gop: 25, bframes: true });
  for (const cut of CUTS) {
    const p = new Packager(
      readSettings({ 'ott-hls': 2, 'ott-segment-duration': 1, 'ott-part-duration': 0.25 }),
      new ManualClock(),
    );
    p.packets(a.subarray(0, cut * 188));
    p.discontinuity();
    p.packets(b);
    p.end();
    // End of the last segment before the splice, from its tfdt and sample durations (seconds).
    const endOf = (type: 'video' | 'audio') => {
      const segs = p.renditions.find((r) => r.track.type === type)!.store.all();
      const last = segs[segs.findIndex((s) => s.discontinuity) - 1]!;
      return last.start / last.timescale + last.duration;
    };
    const video = endOf('video');
    const audio = endOf('audio');
    t.ok(
      Math.abs(audio - video) < 0.002,
      `cut ${cut}: audio ends at ${audio.toFixed(3)} s, video at ${video.toFixed(3)} s`,
    );
  }
});
