// GroupDiscontinuities (src/ott/group-discontinuity.ts) on stand-in packagers: a splice of one
// member is a discontinuity at the same media time in the others — at their next boundary, or
// on their open segment when they are ahead (its CMAF open parts renumbered too); two members
// splicing together make one discontinuity; a group recreated goes on from its members' numbers.
import t from 'tap';
import { GroupDiscontinuities } from '../../src/ott/group-discontinuity.ts';
import type { Packager } from '../../src/ott/packager.ts';
import type { Boundary, SegmenterSink } from '../../src/ott/segmenter.ts';
import type { OpenSegment } from '../../src/ott/store.ts';

const S = 90_000;

interface Member {
  packager: Packager;
  /** A boundary at `sec` seconds of media time, through the member's sinks. */
  cut(sec: number, splice?: boolean): Boundary;
  open?: OpenSegment;
  store: { open?: OpenSegment; version: number; last(): undefined };
}

function member(numbered?: number): Member {
  const sinks = new Set<SegmenterSink>();
  const store = { open: undefined as OpenSegment | undefined, version: 0, last: () => undefined };
  const packager = {
    segmenter: {
      targetDuration: 1,
      addSink: (s: SegmenterSink) => sinks.add(s),
      removeSink: (s: SegmenterSink) => sinks.delete(s),
    },
    periodWallclock: new Map<number, number>(),
    tsStore: { last: () => (numbered === undefined ? undefined : { discSeq: numbered }) },
    renditions: [{ store }],
  } as unknown as Packager;
  let seq = 0;
  return {
    packager,
    store,
    cut(sec, splice = false) {
      const b: Boundary = {
        seq: seq++,
        pts: sec * S,
        packetIndex: 0,
        discSeq: 0,
        discontinuity: splice,
        wallclock: sec * 1000,
      };
      if (splice) for (const s of sinks) s.splice(0);
      for (const s of sinks) s.boundary(b);
      return b;
    },
  };
}

/** A group over two fresh members. */
function pair(): { g: GroupDiscontinuities; a: Member; b: Member } {
  const g = new GroupDiscontinuities();
  const a = member();
  const b = member();
  g.sync([a.packager, b.packager]);
  return { g, a, b };
}

const numbers = (bs: Boundary[]) => bs.map((b) => `${b.discSeq}${b.discontinuity ? '*' : ''}`);

t.test('a sibling behind takes the discontinuity at its boundary of that time', async (t) => {
  const { a, b } = pair();
  const as = [a.cut(0), a.cut(1), a.cut(3, true), a.cut(4)];
  const bs = [b.cut(0), b.cut(1), b.cut(2), b.cut(3), b.cut(4)];
  t.same(numbers(as), ['0', '0', '1*', '1']);
  t.same(numbers(bs), ['0', '0', '0', '1*', '1']);
  t.equal(b.packager.periodWallclock.get(1), 3000, 'its DASH Period starts there');
});

t.test('a sibling ahead: its open segment takes it, CMAF open parts too', async (t) => {
  const { a, b } = pair();
  a.cut(0);
  b.cut(0);
  const b3 = b.cut(3);
  b.store.open = { seq: b3.seq, discSeq: 0, discontinuity: false } as OpenSegment;
  const a3 = a.cut(3, true);
  t.same(numbers([a3, b3]), ['1*', '1*'], 'both segments at 3 s are numbered 1');
  t.same([b.store.open.discSeq, b.store.open.discontinuity], [1, true], 'the open CMAF segment');
  t.equal(b.store.version, 1, 'cached playlists of it are stale');
  t.same(numbers([b.cut(4), a.cut(4)]), ['1', '1'], 'no second discontinuity');
});

t.test('two members spliced at one time: one discontinuity', async (t) => {
  const { g, a, b } = pair();
  a.cut(0);
  b.cut(0);
  const a3 = a.cut(3, true);
  const b3 = b.cut(3.04, true);
  t.same(numbers([a3, b3, a.cut(4), b.cut(4)]), ['1*', '1*', '1', '1']);
  t.equal(g.seq, 1);
});

t.test('a group recreated goes on from its members’ numbers', async (t) => {
  const g = new GroupDiscontinuities();
  const a = member(2);
  const b = member(0);
  g.sync([a.packager, b.packager]);
  t.same(numbers([a.cut(5), b.cut(5)]), ['2', '2*'], 'never back; the other comes up to it');
  g.sync([a.packager]);
  t.same(numbers([b.cut(6)]), ['0'], 'a member let go is not numbered any more');
});
