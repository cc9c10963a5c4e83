// One discontinuity numbering for the members of an adaptive group: a splice in one member (its
// encoder restarted) becomes a discontinuity at the same media time in every member, so segments
// of matching content carry matching discontinuity sequence numbers (RFC 8216 §6.2.4).

import type { Packager } from './packager.ts';
import type { Boundary, SegmenterSink } from './segmenter.ts';
import { ptsDiff } from './timeline.ts';

/** Discontinuity points remembered; older ones are folded into `base` (far out of any window). */
const POINTS_KEPT = 64;
/** Boundaries this close (in target durations) to a point count as cut at its media time. */
const SAME_TIME_TARGETS = 0.25;

/** A discontinuity of the group: from media time `pts` on, the group's sequence number is `seq`. */
interface Point {
  pts: number;
  seq: number;
}

interface Member {
  packager: Packager;
  sink: SegmenterSink;
  /** Group sequence number of the member's last boundary (undefined before its first). */
  seq?: number;
  /** The member's last boundary while its segment is still open (not yet in a store). */
  open?: Boundary;
}

/** The discontinuity sequence number of a packager's newest segment, if it has one. */
function numbered(p: Packager): number | undefined {
  const seqs = [p.tsStore?.last()?.discSeq];
  for (const r of p.renditions) seqs.push(r.store.last()?.discSeq, r.store.open?.discSeq);
  const known = seqs.filter((n): n is number => n !== undefined);
  return known.length ? Math.max(...known) : undefined;
}

export class GroupDiscontinuities {
  private points: Point[] = [];
  /** The number before every point kept (points folded away, members' own numbers). */
  private base = 0;
  private members = new Map<Packager, Member>();

  /** The group's current discontinuity sequence number. */
  get seq(): number {
    return Math.max(this.base, this.points.at(-1)?.seq ?? 0);
  }

  /** Follow these packagers (the running members); let go of any other. */
  sync(packagers: Packager[]): void {
    const keep = new Set(packagers);
    for (const [p, m] of this.members)
      if (!keep.has(p)) {
        p.segmenter.removeSink(m.sink);
        this.members.delete(p);
      }
    for (const p of packagers) if (!this.members.has(p)) this.attach(p);
  }

  close(): void {
    this.sync([]);
  }

  private attach(packager: Packager): void {
    // A member already numbered (the group recreated) goes on from its number: a playlist's
    // discontinuity sequence never goes back, and the others come up to it.
    const seq = numbered(packager);
    if (seq !== undefined && seq > this.seq) this.base = seq;
    const m: Member = {
      packager,
      seq,
      sink: {
        // Every sink sees the same Boundary object and the writers read its numbers when they
        // store the segment: setting them here numbers the member's segments in the group.
        boundary: (b) => this.boundary(m, b),
        splice: () => {
          m.open = undefined;
        },
      },
    };
    this.members.set(packager, m);
    packager.segmenter.addSink(m.sink);
  }

  private slack(m: Member): number {
    return m.packager.segmenter.targetDuration * SAME_TIME_TARGETS * 90_000;
  }

  /** The group's sequence number at media time `pts`. */
  private seqAt(pts: number, slack: number): number {
    let seq = this.base;
    for (const p of this.points) if (ptsDiff(p.pts, pts) <= slack) seq = Math.max(seq, p.seq);
    return seq;
  }

  private boundary(m: Member, b: Boundary): void {
    const slack = this.slack(m);
    const due = this.seqAt(b.pts, slack);
    const prev = m.seq;
    let seq = Math.max(prev ?? due, due);
    if (b.discontinuity && (prev === undefined || seq === prev)) {
      // The member's own splice with no sibling's point here yet: a new point of the group.
      seq = this.seq + 1;
      this.points.push({ pts: b.pts, seq });
      if (this.points.length > POINTS_KEPT)
        this.base = Math.max(this.base, this.points.shift()!.seq);
      this.number(m, b, seq, prev !== undefined);
      for (const s of this.members.values()) if (s !== m) this.follow(s, b.pts, seq, slack);
      return;
    }
    this.number(m, b, seq, b.discontinuity || (prev !== undefined && seq > prev));
  }

  /** Give boundary `b` of member `m` the group's number `seq`. */
  private number(m: Member, b: Boundary, seq: number, discontinuity: boolean): void {
    const starts = seq !== m.seq;
    b.discSeq = seq;
    b.discontinuity = discontinuity;
    m.seq = seq;
    m.open = b;
    // DASH: the member's Period of this run starts at this boundary's wall clock.
    if (starts) m.packager.periodWallclock.set(seq, b.wallclock);
  }

  /**
   * A sibling's point at `pts`: the member's open segment takes it when it starts at or after
   * that time (it is not in a store yet; a CMAF rendition's open parts are renumbered with it).
   * Otherwise its next boundary at or past `pts` does (seqAt).
   */
  private follow(s: Member, pts: number, seq: number, slack: number): void {
    const o = s.open;
    if (!o || s.seq === undefined || s.seq >= seq || ptsDiff(pts, o.pts) > slack) return;
    this.number(s, o, seq, true);
    for (const r of s.packager.renditions) {
      const open = r.store.open;
      if (open?.seq !== o.seq) continue;
      open.discSeq = seq;
      open.discontinuity = true;
      r.store.version++; // cached playlists of the open segment are stale
    }
  }
}
