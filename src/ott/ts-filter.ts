// Track selection on HLS-over-TS segments (live parameters `a` and `v`): the packets of the
// audio and video PIDs not selected are dropped and the PMT is rewritten without them, so a
// player sees only the chosen tracks. Results are cached per segment and selection.
import { payloadOffset, pid, pusi, TS_PACKET_SIZE } from '../mpegts/packet.ts';
import {
  PMT_TABLE_ID,
  pmtWithoutStreams,
  SECTION_PREFIX_SIZE,
  STUFFING_BYTE,
  sectionLength,
} from '../mpegts/psi.ts';

/** Filtered segments kept (a few per selection and window; old ones fall out first). */
const CACHE_ENTRIES = 64;

/** A PMT packet (whole section in one packet) without the ES entries of `drop`; the same
 *  packet when the section spans packets (left as it is: players ignore the silent PIDs). */
function rewritePmt(p: Buffer, drop: Set<number>): Buffer {
  const o = payloadOffset(p);
  if (!pusi(p) || o >= TS_PACKET_SIZE) return p;
  const at = o + 1 + p[o]!; // after the pointer field
  if (p[at] !== PMT_TABLE_ID) return p;
  if (at + SECTION_PREFIX_SIZE + sectionLength(p, at) > TS_PACKET_SIZE) return p;
  const out = Buffer.alloc(TS_PACKET_SIZE, STUFFING_BYTE);
  p.copy(out, 0, 0, at); // header, adaptation field, pointer field
  pmtWithoutStreams(p.subarray(at), drop).copy(out, at);
  return out;
}

/** `data` without the packets of `drop`, the PMT (on `pmtPid`) rewritten to match. */
export function filterPids(data: Buffer, drop: Set<number>, pmtPid: number): Buffer {
  const out = Buffer.allocUnsafe(data.length);
  let n = 0;
  for (let o = 0; o + TS_PACKET_SIZE <= data.length; o += TS_PACKET_SIZE) {
    const id = pid(data, o);
    if (drop.has(id)) continue;
    const p = data.subarray(o, o + TS_PACKET_SIZE);
    (id === pmtPid ? rewritePmt(p, drop) : p).copy(out, n);
    n += TS_PACKET_SIZE;
  }
  return out.subarray(0, n);
}

/** Filtered segments by `<uri>|<dropped pids>`, oldest evicted first. */
export class FilteredCache {
  private entries = new Map<string, Buffer>();

  get(uri: string, drop: Set<number>, make: () => Buffer): Buffer {
    const key = `${uri}|${[...drop].sort((a, b) => a - b).join(',')}`;
    let v = this.entries.get(key);
    if (!v) {
      v = make();
      this.entries.set(key, v);
      if (this.entries.size > CACHE_ENTRIES) this.entries.delete(this.entries.keys().next().value!);
    }
    return v;
  }
}
