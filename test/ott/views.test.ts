// Document views: a new DASH Period is listed only once every rendition has reached it.
import t from 'tap';
import type { DashPeriod, DashRepresentation } from '../../src/ott/dash.ts';
import type { SegmentDescriptor } from '../../src/ott/store.ts';
import { holdBackIncompletePeriods } from '../../src/ott/views.ts';

function rep(id: string, segments: number): DashRepresentation {
  const segs = Array.from({ length: segments }, (_, i) => ({ seq: i }) as SegmentDescriptor);
  return {
    id,
    contentType: id === 'video' ? 'video' : 'audio',
    codecs: '',
    bandwidth: 1,
    segments: segs,
    timescale: 90_000,
    periodOrigin: 0,
    base: `${id}/`,
  };
}

function periods(...runs: [number, DashRepresentation[]][]): Map<number, DashPeriod> {
  return new Map(
    runs.map(([disc, reps]) => [disc, { id: `p${disc}`, start: disc, representations: reps }]),
  );
}

t.test('a new Period waits for every rendition', async (t) => {
  // After a splice the video's first segment of the new run is stored before the audio's.
  const p = periods([0, [rep('video', 6), rep('audio', 6)]], [1, [rep('video', 1)]]);
  holdBackIncompletePeriods(p, 2);
  t.same([...p.keys()], [0], 'the Period with video only is not listed yet');

  const q = periods(
    [0, [rep('video', 6), rep('audio', 6)]],
    [1, [rep('video', 1), rep('audio', 1)]],
  );
  holdBackIncompletePeriods(q, 2);
  t.same([...q.keys()], [0, 1], 'listed once the audio has its first segment there');
});

t.test('a track the new input does not carry does not hold the Period back for ever', async (t) => {
  const p = periods([0, [rep('video', 6), rep('audio', 6)]], [1, [rep('video', 2)]]);
  holdBackIncompletePeriods(p, 2);
  t.same([...p.keys()], [0, 1], 'listed with what it has after two segments');
});

t.test('only the newest Periods are held back, never the only one', async (t) => {
  // The oldest Period may miss a rendition whose first segments already left the window.
  const p = periods([3, [rep('audio', 1)]], [4, [rep('video', 3), rep('audio', 3)]]);
  holdBackIncompletePeriods(p, 2);
  t.same([...p.keys()], [3, 4]);
  const only = periods([5, [rep('video', 1)]]);
  holdBackIncompletePeriods(only, 2);
  t.same([...only.keys()], [5], 'a stream that starts lists its first Period at once');
});
