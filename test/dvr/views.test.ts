// Static MPD across a mid-archive change of the video (new init: other resolution and codec
// level): each Period's Representation describes the init it plays, not the window's first.
import t from 'tap';
import type { ChunkRow } from '../../src/dvr/index-db.ts';
import { type ArchiveTrack, vodMpd } from '../../src/dvr/views.ts';

const T0 = Date.UTC(2026, 2, 1, 10, 0, 0);

function row(id: number, startMs: number, initId: number): ChunkRow {
  return {
    id,
    stream: 's',
    track: 'c33',
    start_ms: startMs,
    duration: 2,
    bytes: 1000,
    path: `p${id}`,
    uri: `${id}.m4s`,
    disc: 0,
    media_start: 0,
    timescale: 90000,
    init_id: initId,
  };
}

t.test('each Period carries the codec and size of its own init', async (t) => {
  const rows = [row(1, T0, 2), row(2, T0 + 2000, 2), row(3, T0 + 4000, 5), row(4, T0 + 6000, 5)];
  const sizes: Record<number, { codec: string; width: number; height: number }> = {
    2: { codec: 'avc1.64000c', width: 320, height: 180 },
    5: { codec: 'avc1.64001e', width: 640, height: 360 },
  };
  const track: ArchiveTrack = {
    id: 'c33',
    pid: 33,
    type: 'video',
    ...sizes[2]!,
    lang: '',
    rows,
    attrs: (id) => sizes[id],
  };
  const mpd = vodMpd([track], 2);
  const periods = mpd.split('<Period ').slice(1);
  t.equal(periods.length, 2, 'the new init starts a Period');
  t.match(periods[0]!, /codecs="avc1\.64000c"[^>]*width="320" height="180"/);
  t.match(periods[1]!, /codecs="avc1\.64001e"[^>]*width="640" height="360"/);
  t.match(periods[1]!, /dvr-i5\/init\.mp4/);
});
