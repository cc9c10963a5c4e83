// The live `a`/`v` track selection applied to archived HLS-TS chunks: which PIDs a selection
// drops (from the track layout recorded with the chunk) and the PMT PID read from the chunk's
// own PAT, so the OTT part's PID filter can cut the chunk exactly as it cuts a live segment.

const PACKET = 188;
const SYNC = 0x47;
const PAT_TABLE_ID = 0x00;

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
  for (let o = 0; o + PACKET <= data.length; o += PACKET) {
    if (data[o] !== SYNC) continue;
    const pid = ((data[o + 1]! & 0x1f) << 8) | data[o + 2]!;
    if (pid !== 0 || !(data[o + 1]! & 0x40)) continue;
    let p = o + 4;
    if (data[o + 3]! & 0x20) p += 1 + data[p]!;
    p += 1 + data[p]!; // pointer field
    if (p + 8 > o + PACKET || data[p] !== PAT_TABLE_ID) continue;
    const len = ((data[p + 1]! & 0x0f) << 8) | data[p + 2]!;
    const end = Math.min(p + 3 + len - 4, o + PACKET);
    for (let e = p + 8; e + 4 <= end; e += 4) {
      const program = (data[e]! << 8) | data[e + 1]!;
      if (program !== 0) return ((data[e + 2]! & 0x1f) << 8) | data[e + 3]!;
    }
  }
  return undefined;
}
