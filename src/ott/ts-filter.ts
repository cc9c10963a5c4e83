// Track selection on HLS-over-TS segments (live parameters `a` and `v`): the packets of the
// audio and video PIDs not selected are dropped and the PMT is rewritten without them, so a
// player sees only the chosen tracks. Results are cached per segment and selection.

const PACKET = 188;
const PMT_TABLE_ID = 0x02;
/** Filtered segments kept (a few per selection and window; old ones fall out first). */
const CACHE_ENTRIES = 64;

/** CRC-32/MPEG-2 (polynomial 0x04C11DB7, no reflection) of PSI sections. */
const CRC_TABLE = (() => {
  const t = new Uint32Array(256);
  for (let i = 0; i < 256; i++) {
    let c = i << 24;
    for (let k = 0; k < 8; k++) c = c & 0x80000000 ? (c << 1) ^ 0x04c11db7 : c << 1;
    t[i] = c >>> 0;
  }
  return t;
})();

export function crc32Mpeg(buf: Buffer): number {
  let crc = 0xffffffff;
  for (const b of buf) crc = ((crc << 8) ^ CRC_TABLE[((crc >>> 24) ^ b) & 0xff]!) >>> 0;
  return crc >>> 0;
}

const pidOf = (p: Buffer, o: number) => ((p[o + 1]! & 0x1f) << 8) | p[o + 2]!;

/** A PMT packet (whole section in one packet) without the ES entries of `drop`; the same
 *  packet when the section spans packets (left as it is: players ignore the silent PIDs). */
function rewritePmt(p: Buffer, drop: Set<number>): Buffer {
  let o = 4;
  if (p[3]! & 0x20) o += 1 + p[4]!;
  if (!(p[1]! & 0x40) || o >= PACKET) return p;
  o += 1 + p[o]!; // pointer field
  if (p[o] !== PMT_TABLE_ID) return p;
  const len = ((p[o + 1]! & 0x0f) << 8) | p[o + 2]!;
  if (o + 3 + len > PACKET) return p;
  const infoLen = ((p[o + 10]! & 0x0f) << 8) | p[o + 11]!;
  const kept: Buffer[] = [p.subarray(o, o + 12 + infoLen)];
  for (let e = o + 12 + infoLen; e + 5 <= o + 3 + len - 4; ) {
    const esLen = ((p[e + 3]! & 0x0f) << 8) | p[e + 4]!;
    const pid = ((p[e + 1]! & 0x1f) << 8) | p[e + 2]!;
    if (!drop.has(pid)) kept.push(p.subarray(e, e + 5 + esLen));
    e += 5 + esLen;
  }
  const body = Buffer.concat(kept);
  const sectionLength = body.length - 3 + 4;
  body[1] = (body[1]! & 0xf0) | ((sectionLength >> 8) & 0x0f);
  body[2] = sectionLength & 0xff;
  const crc = Buffer.alloc(4);
  crc.writeUInt32BE(crc32Mpeg(body));
  const out = Buffer.alloc(PACKET, 0xff);
  p.copy(out, 0, 0, o); // header, adaptation field, pointer field
  Buffer.concat([body, crc]).copy(out, o);
  return out;
}

/** `data` without the packets of `drop`, the PMT (on `pmtPid`) rewritten to match. */
export function filterPids(data: Buffer, drop: Set<number>, pmtPid: number): Buffer {
  const out = Buffer.allocUnsafe(data.length);
  let n = 0;
  for (let o = 0; o + PACKET <= data.length; o += PACKET) {
    const pid = pidOf(data, o);
    if (drop.has(pid)) continue;
    const p = data.subarray(o, o + PACKET);
    (pid === pmtPid ? rewritePmt(p, drop) : p).copy(out, n);
    n += PACKET;
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
