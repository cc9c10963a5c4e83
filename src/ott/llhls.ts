// Low-latency HLS media playlist (CMAF mode): parts of the recent segments and of the open
// one, server control for blocking reloads and delta updates, the preload hint and the
// rendition reports of the sibling renditions.
import { formatDuration, mediaHeader, quote, segmentLines } from './hls.ts';
import type { OpenSegment, PartDescriptor, SegmentDescriptor } from './store.ts';

export const HLS_VERSION_LL = 9;
/** Parts are listed for segments within this many target durations of the live edge. */
const PART_LIST_TARGETS = 3;
/** PART-HOLD-BACK in part targets (the minimum RFC 8216bis allows). */
const PART_HOLD_BACK_PARTS = 3;
/** CAN-SKIP-UNTIL in target durations (the minimum allowed is six). */
const SKIP_UNTIL_TARGETS = 6;

export interface RenditionReport {
  uri: string;
  lastMsn: number;
  lastPart: number;
}

export interface LowLatencyOptions {
  segments: SegmentDescriptor[];
  open?: OpenSegment;
  targetDuration: number;
  partTarget: number;
  map: string;
  skip: boolean;
  reports: RenditionReport[];
}

function partLine(p: PartDescriptor): string {
  const attrs = [`DURATION=${formatDuration(p.duration)}`, `URI=${quote(p.uri)}`];
  if (p.independent) attrs.push('INDEPENDENT=YES');
  return `#EXT-X-PART:${attrs.join(',')}`;
}

export function skipUntil(targetDuration: number): number {
  return SKIP_UNTIL_TARGETS * targetDuration;
}

/** Last media sequence number and part index a playlist of this store shows. */
export function lastPosition(
  segments: SegmentDescriptor[],
  open?: OpenSegment,
): { msn: number; part: number } {
  if (open && open.parts.length > 0) return { msn: open.seq, part: open.parts.length - 1 };
  const last = segments[segments.length - 1];
  return last ? { msn: last.seq, part: Math.max(0, last.parts.length - 1) } : { msn: -1, part: -1 };
}

export function buildLowLatencyPlaylist(o: LowLatencyOptions): string {
  const until = skipUntil(o.targetDuration);
  const control = [
    'CAN-BLOCK-RELOAD=YES',
    `PART-HOLD-BACK=${formatDuration(PART_HOLD_BACK_PARTS * o.partTarget)}`,
    `CAN-SKIP-UNTIL=${formatDuration(until)}`,
  ];
  const extra = [
    `#EXT-X-SERVER-CONTROL:${control.join(',')}`,
    `#EXT-X-PART-INF:PART-TARGET=${formatDuration(o.partTarget)}`,
  ];
  const lines = mediaHeader(
    { segments: o.segments, targetDuration: o.targetDuration, map: o.map, version: HLS_VERSION_LL },
    extra,
  );
  const total = o.segments.reduce((a, s) => a + s.duration, 0);
  let skipped = 0;
  if (o.skip) {
    let age = total;
    for (const s of o.segments) {
      if (age - s.duration < until) break;
      age -= s.duration;
      skipped++;
    }
    if (skipped > 0) lines.push(`#EXT-X-SKIP:SKIPPED-SEGMENTS=${skipped}`);
  }
  let fromEnd = total;
  o.segments.forEach((s, i) => {
    fromEnd -= s.duration;
    if (i < skipped) return;
    const recent = fromEnd + s.duration <= PART_LIST_TARGETS * o.targetDuration;
    lines.push(...segmentLines(s, i, o.segments[i - 1], '', recent ? s.parts.map(partLine) : []));
  });

  const last = o.segments[o.segments.length - 1];
  if (o.open) {
    if (last && o.open.discSeq !== last.discSeq) lines.push('#EXT-X-DISCONTINUITY');
    if (last && o.open.map && o.open.map !== (last.map ?? 'init.mp4'))
      lines.push(`#EXT-X-MAP:URI=${quote(o.open.map)}`);
    for (const p of o.open.parts) lines.push(partLine(p));
    lines.push(
      `#EXT-X-PRELOAD-HINT:TYPE=PART,URI=${quote(`${o.open.seq}.${o.open.parts.length}.m4s`)}`,
    );
  } else if (last) {
    lines.push(`#EXT-X-PRELOAD-HINT:TYPE=PART,URI=${quote(`${last.seq + 1}.0.m4s`)}`);
  }
  for (const r of o.reports) {
    lines.push(
      `#EXT-X-RENDITION-REPORT:URI=${quote(r.uri)},LAST-MSN=${r.lastMsn},LAST-PART=${r.lastPart}`,
    );
  }
  return `${lines.join('\n')}\n`;
}
