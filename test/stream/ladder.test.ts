// Adaptive ladder (test/helpers/ladder.ts: one test source, three `transcoder` renditions of it
// started at different moments, a `stream-adaptive` group over them) with HLS-TS. The three media
// playlists must cut at the same source PTS (segment start PTS read from each segment's first
// video packet by ffprobe), and every segment of every rendition must begin with a key frame
// (docs/transcoder.md "Adaptive ladders").
import t from 'tap';
import { checkAlignedSegments, startLadder } from '../helpers/ladder.ts';

const WANT_SEGMENTS = 4;

const ladder = await startLadder(t, 1);

t.test('three renditions cut at the same PTS, each segment opens on a key frame', async (t) => {
  await checkAlignedSegments(t, ladder, WANT_SEGMENTS);
  const master = await (await fetch(`${ladder.base}/abr/index.m3u8`)).text();
  t.equal(master.match(/#EXT-X-STREAM-INF/g)?.length, 3, 'three variants in the master');
});
