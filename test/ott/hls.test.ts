// Playlist builders from descriptor lists: live vs archive markers (spec 3 rule 4),
// discontinuities, LL-HLS parts, skip and preload hint; DASH periods per discontinuity.
import t from 'tap';
import { buildMpd } from '../../src/ott/dash.ts';
import { buildMediaPlaylist } from '../../src/ott/hls.ts';
import { buildLowLatencyPlaylist } from '../../src/ott/llhls.ts';
import type { SegmentDescriptor } from '../../src/ott/store.ts';

function seg(seq: number, discSeq = 0, discontinuity = false): SegmentDescriptor {
  return {
    seq,
    discSeq,
    discontinuity,
    start: seq * 360000,
    timescale: 90000,
    duration: 4,
    wallclock: Date.UTC(2026, 0, 1) + seq * 4000,
    uri: `${seq}.m4s`,
    size: 1000,
    parts: [0, 1].map((i) => ({
      index: i,
      duration: 2,
      independent: i === 0,
      uri: `${seq}.${i}.m4s`,
      size: 500,
    })),
  };
}

t.test('live media playlist', async (t) => {
  const text = buildMediaPlaylist({
    segments: [seg(7), seg(8), seg(9, 1, true)],
    targetDuration: 4,
  });
  t.match(text, /#EXT-X-MEDIA-SEQUENCE:7\n/);
  t.notMatch(text, /ENDLIST|PLAYLIST-TYPE/);
  t.match(text, /8\.m4s\n#EXT-X-DISCONTINUITY\n#EXTINF:4\.000,\n9\.m4s/);
  t.match(text, /#EXT-X-PROGRAM-DATE-TIME:2026-01-01T00:00:28\.000Z\n#EXTINF/);
  const after = buildMediaPlaylist({ segments: [seg(9, 1, true), seg(10, 1)], targetDuration: 4 });
  t.match(after, /#EXT-X-DISCONTINUITY-SEQUENCE:1\n/);
  t.notMatch(after, /#EXT-X-DISCONTINUITY\n/, 'no marker before the first segment');
});

t.test('archive playlist (spec 3 rule 4) and empty window (rule 3)', async (t) => {
  const text = buildMediaPlaylist({
    segments: [seg(7), seg(8)],
    targetDuration: 4,
    vod: true,
    map: 'init.mp4',
  });
  t.match(text, /#EXT-X-VERSION:6\n/);
  t.match(text, /#EXT-X-PLAYLIST-TYPE:VOD\n/);
  t.match(text, /#EXT-X-MEDIA-SEQUENCE:0\n/);
  t.match(text, /#EXT-X-ENDLIST\n$/);
  const empty = buildMediaPlaylist({ segments: [], targetDuration: 4, vod: true });
  t.notMatch(empty, /EXTINF/);
  t.match(empty, /#EXT-X-ENDLIST\n$/);
  t.equal(
    buildMediaPlaylist({ segments: [seg(1)], targetDuration: 4, vod: true }),
    buildMediaPlaylist({ segments: [seg(1)], targetDuration: 4, vod: true }),
    'byte-identical on repeat (rule 10)',
  );
});

t.test('LL-HLS playlist', async (t) => {
  const segments = [1, 2, 3, 4, 5, 6, 7, 8, 9, 10].map((n) => seg(n));
  const open = {
    seq: 11,
    discSeq: 1,
    discontinuity: true,
    start: 0,
    wallclock: 0,
    parts: [seg(11).parts[0]!],
  };
  const base = { segments, open, targetDuration: 4, partTarget: 2, map: 'init.mp4', reports: [] };
  const text = buildLowLatencyPlaylist({ ...base, skip: false });
  t.match(text, /#EXT-X-PART-INF:PART-TARGET=2\.000/);
  t.match(
    text,
    /#EXT-X-PART:DURATION=2\.000,URI="10\.0\.m4s",INDEPENDENT=YES\n#EXT-X-PART:DURATION=2\.000,URI="10\.1\.m4s"\n#EXTINF/,
  );
  t.notMatch(text, /URI="7\.0\.m4s"/, 'parts only near the live edge');
  t.match(text, /10\.m4s\n#EXT-X-DISCONTINUITY\n#EXT-X-PART:DURATION=2\.000,URI="11\.0\.m4s"/);
  t.match(text, /#EXT-X-PRELOAD-HINT:TYPE=PART,URI="11\.1\.m4s"/);
  const skipped = buildLowLatencyPlaylist({ ...base, skip: true });
  t.match(skipped, /#EXT-X-SKIP:SKIPPED-SEGMENTS=4\n/, '40 s listed, 24 s must stay');
  t.notMatch(skipped, /\n1\.m4s\n/);
});

t.test('DASH: dynamic with a period per discontinuity, static archive', async (t) => {
  const rep = (segs: SegmentDescriptor[]) => ({
    id: 'c256',
    contentType: 'video' as const,
    codecs: 'avc1.4d4014',
    bandwidth: 1e6,
    segments: segs,
    timescale: 90000,
    periodOrigin: segs[0]!.start,
    base: 'c256/',
  });
  const common = {
    availabilityStartTime: Date.UTC(2026, 0, 1),
    publishTime: Date.UTC(2026, 0, 1, 0, 1),
    timeShiftBufferDepth: 24,
    minimumUpdatePeriod: 4,
    minBufferTime: 4,
    suggestedPresentationDelay: 8,
    maxSegmentDuration: 4,
  };
  const mpd = buildMpd({
    ...common,
    dynamic: true,
    utcTiming: 'time',
    periods: [
      { id: 'p0', start: 0, representations: [rep([seg(1), seg(2)])] },
      { id: 'p1', start: 8, representations: [rep([seg(3, 1, true)])] },
    ],
  });
  t.match(mpd, /type="dynamic"/);
  t.equal(mpd.match(/<Period /g)?.length, 2);
  t.match(
    mpd,
    /media="c256\/\$Number\$\.m4s" startNumber="1"><SegmentTimeline><S t="360000" d="360000" r="1"\/>/,
  );
  t.match(mpd, /<UTCTiming schemeIdUri="urn:mpeg:dash:utc:http-iso:2014" value="time"\/>/);
  const vod = buildMpd({ ...common, dynamic: false, duration: 0, periods: [] });
  t.match(vod, /type="static"/);
  t.match(vod, /mediaPresentationDuration="PT0\.000S"/);
});
