// The live `a`/`v` track selection applied to archived HLS-TS chunks: which PIDs a selection
// drops (from the track layout recorded with the chunk) and the PMT PID read from the chunk's
// own PAT, so the OTT part's PID filter can cut the chunk exactly as it cuts a live segment.

import { PAT_PID, payloadOffset, pid, pusi, SYNC_BYTE, TS_PACKET_SIZE } from '../mpegts/packet.ts';
import { LONG_HEADER_SIZE, PAT_TABLE_ID, parsePat } from '../mpegts/psi.ts';

export interface LayoutTrack {
  pid: number;
  type: string;
  lang: string;
}

/** `a`/`v` of a request as lists (empty = no selection), as the live parameters read them. */
export function selectionOf(query: Record<string, string | undefined>): {
  audio: string[];
  video: string[];
} {
  const list = (v: string | undefined) => (v ? v.split(',').map((s) => s.trim()) : []);
  return { audio: list(query.a), video: list(query.v) };
}

/** `?a=…&v=…` to append to archived segment URIs ('' without a selection). */
export function selectionQuery(query: Record<string, string | undefined>): string {
  const parts: string[] = [];
  if (query.a) parts.push(`a=${encodeURIComponent(query.a)}`);
  if (query.v) parts.push(`v=${encodeURIComponent(query.v)}`);
  return parts.length > 0 ? `?${parts.join('&')}` : '';
}

/** PIDs of audio and video tracks that the selection leaves out (same rule as live). */
export function droppedByLayout(
  layout: LayoutTrack[],
  sel: { audio: string[]; video: string[] },
): Set<number> {
  const drop = new Set<number>();
  for (const t of layout) {
    const want = t.type === 'video' ? sel.video : t.type === 'audio' ? sel.audio : [];
    if (want.length === 0) continue;
    if (!want.includes(String(t.pid)) && !(t.lang && want.includes(t.lang))) drop.add(t.pid);
  }
  return drop;
}

/** The PMT PID of the first programme in the first whole PAT section of `data`. */
export function pmtPidOf(data: Buffer): number | undefined {
  for (let o = 0; o + TS_PACKET_SIZE <= data.length; o += TS_PACKET_SIZE) {
    if (data[o] !== SYNC_BYTE || pid(data, o) !== PAT_PID || !pusi(data, o)) continue;
    let p = o + payloadOffset(data, o);
    p += 1 + data[p]!; // pointer field
    if (p + LONG_HEADER_SIZE > o + TS_PACKET_SIZE || data[p] !== PAT_TABLE_ID) continue;
    const first = parsePat(data.subarray(p, o + TS_PACKET_SIZE)).programs[0];
    if (first) return first.pid;
  }
  return undefined;
}
