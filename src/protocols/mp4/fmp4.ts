// Fragmented MP4 (ISO/IEC 14496-12, CMAF) demux, no I/O: the initialisation segment (moov:
// tracks, their codec and decoder config, trex defaults) and media segments (moof + mdat) →
// frames with decode and presentation times in the track's timescale, ordered by decode time
// across tracks, ready for src/mpegts/es-mux.ts. Bounded: box sizes are checked against the
// buffer, sample counts against the bytes that could hold them.
import type { EsCodec } from '../../mpegts/es-mux.ts';

export interface Mp4Track {
  id: number;
  /** undefined: a codec the muxer cannot carry (reported by name in `sampleEntry`). */
  codec: EsCodec | undefined;
  sampleEntry: string;
  timescale: number;
  /** avcC / hvcC record, or the AAC AudioSpecificConfig. */
  config?: Buffer;
  language?: string;
  defaultDuration: number;
  defaultSize: number;
  defaultFlags: number;
}

export interface Mp4Init {
  tracks: Mp4Track[];
}

export interface Mp4Frame {
  trackId: number;
  /** Decode and presentation times in the track's timescale. */
  dts: number;
  pts: number;
  key: boolean;
  data: Buffer;
}

const SAMPLE_IS_NON_SYNC = 0x00010000;
const MAX_DEPTH = 16;

interface Box {
  type: string;
  start: number;
  body: number;
  end: number;
}

function* boxes(b: Buffer, from: number, to: number): Generator<Box> {
  let o = from;
  while (o + 8 <= to) {
    let size = b.readUInt32BE(o);
    const type = b.toString('latin1', o + 4, o + 8);
    let body = o + 8;
    if (size === 1) {
      if (o + 16 > to) return;
      const big = b.readBigUInt64BE(o + 8);
      if (big > BigInt(to - o)) return;
      size = Number(big);
      body = o + 16;
    } else if (size === 0) size = to - o;
    if (size < body - o || o + size > to) return;
    yield { type, start: o, body, end: o + size };
    o += size;
  }
}

function child(b: Buffer, parent: Box, type: string): Box | undefined {
  for (const c of boxes(b, parent.body, parent.end)) if (c.type === type) return c;
  return undefined;
}

function path(b: Buffer, parent: Box, types: string[]): Box | undefined {
  let cur: Box | undefined = parent;
  for (const t of types.slice(0, MAX_DEPTH)) {
    if (!cur) return undefined;
    cur = child(b, cur, t);
  }
  return cur;
}

function top(b: Buffer, type: string): Box | undefined {
  for (const c of boxes(b, 0, b.length)) if (c.type === type) return c;
  return undefined;
}

/** Parse an initialisation segment (ftyp + moov). Throws when there is no moov. */
export function parseInit(b: Buffer): Mp4Init {
  const moov = top(b, 'moov');
  if (!moov) throw new Error('fMP4 initialisation segment without moov');
  const tracks: Mp4Track[] = [];
  const trex = new Map<number, { dur: number; size: number; flags: number }>();
  const mvex = child(b, moov, 'mvex');
  if (mvex) {
    for (const c of boxes(b, mvex.body, mvex.end)) {
      if (c.type !== 'trex' || c.end - c.body < 24) continue;
      trex.set(b.readUInt32BE(c.body + 4), {
        dur: b.readUInt32BE(c.body + 12),
        size: b.readUInt32BE(c.body + 16),
        flags: b.readUInt32BE(c.body + 20),
      });
    }
  }
  for (const trak of boxes(b, moov.body, moov.end)) {
    if (trak.type !== 'trak') continue;
    const tkhd = child(b, trak, 'tkhd');
    const mdhd = path(b, trak, ['mdia', 'mdhd']);
    const hdlr = path(b, trak, ['mdia', 'hdlr']);
    const stsd = path(b, trak, ['mdia', 'minf', 'stbl', 'stsd']);
    if (!tkhd || !mdhd || !hdlr || !stsd) continue;
    const handler = b.toString('latin1', hdlr.body + 8, hdlr.body + 12);
    if (handler !== 'vide' && handler !== 'soun') continue;
    const tkv = b[tkhd.body]!;
    const id = b.readUInt32BE(tkhd.body + (tkv === 1 ? 20 : 12));
    const mv = b[mdhd.body]!;
    const timescale = b.readUInt32BE(mdhd.body + (mv === 1 ? 20 : 12));
    const langBits = b.readUInt16BE(mdhd.body + (mv === 1 ? 32 : 20));
    const language = String.fromCharCode(
      ((langBits >> 10) & 31) + 0x60,
      ((langBits >> 5) & 31) + 0x60,
      (langBits & 31) + 0x60,
    );
    const entry = [...boxes(b, stsd.body + 8, stsd.end)][0];
    if (!entry) continue;
    const d = trex.get(id) ?? { dur: 0, size: 0, flags: 0 };
    const t: Mp4Track = {
      id,
      codec: undefined,
      sampleEntry: entry.type,
      timescale: timescale || 90_000,
      defaultDuration: d.dur,
      defaultSize: d.size,
      defaultFlags: d.flags,
      ...(handler === 'soun' && /^[a-z]{3}$/.test(language) && language !== 'und'
        ? { language }
        : {}),
    };
    sampleEntry(b, entry, handler === 'vide', t);
    tracks.push(t);
  }
  return { tracks };
}

function sampleEntry(b: Buffer, e: Box, video: boolean, t: Mp4Track): void {
  // VisualSampleEntry: 8 + 70 bytes before child boxes; AudioSampleEntry: 8 + 20.
  const kids = e.body + (video ? 78 : 28);
  if (kids > e.end) return;
  const find = (type: string) => {
    for (const c of boxes(b, kids, e.end)) if (c.type === type) return c;
    return undefined;
  };
  switch (e.type) {
    case 'avc1':
    case 'avc3': {
      const c = find('avcC');
      t.codec = 'h264';
      if (c) t.config = Buffer.from(b.subarray(c.body, c.end));
      return;
    }
    case 'hvc1':
    case 'hev1': {
      const c = find('hvcC');
      t.codec = 'hevc';
      if (c) t.config = Buffer.from(b.subarray(c.body, c.end));
      return;
    }
    case 'ac-3':
      t.codec = 'ac3';
      return;
    case '.mp3':
      t.codec = 'mp3';
      return;
    case 'mp4a': {
      const esds = find('esds');
      if (!esds) return;
      esdsInto(b, esds.body + 4, esds.end, t);
      return;
    }
  }
}

/** ES_Descriptor → DecoderConfigDescriptor (objectTypeIndication) → DecoderSpecificInfo. */
function esdsInto(b: Buffer, from: number, to: number, t: Mp4Track): void {
  const desc = (o: number): { tag: number; body: number; end: number } | undefined => {
    if (o >= to) return undefined;
    const tag = b[o]!;
    let len = 0;
    let i = o + 1;
    for (let n = 0; n < 4 && i < to; n++) {
      const v = b[i++]!;
      len = (len << 7) | (v & 0x7f);
      if (!(v & 0x80)) break;
    }
    if (i + len > to) return undefined;
    return { tag, body: i, end: i + len };
  };
  const es = desc(from);
  if (es?.tag !== 3) return;
  const flags = b[es.body + 2]!;
  let o = es.body + 3;
  if (flags & 0x80) o += 2;
  if (flags & 0x40) o += 1 + (b[o] ?? 0);
  if (flags & 0x20) o += 2;
  const dc = desc(o);
  if (dc?.tag !== 4) return;
  const oti = b[dc.body]!;
  if (oti === 0x40 || oti === 0x66 || oti === 0x67 || oti === 0x68) t.codec = 'aac';
  else if (oti === 0x69 || oti === 0x6b)
    t.codec = 'mp3'; // MPEG audio (layer from the frames)
  else if (oti === 0xa5) t.codec = 'ac3';
  const dsi = desc(dc.body + 13);
  if (dsi && dsi.tag === 5) t.config = Buffer.from(b.subarray(dsi.body, dsi.end));
}

/** The frames of a media segment (every moof + mdat in it), ordered by decode time across
 *  tracks (seconds), each a view of `b`. Unknown tracks and bad runs are skipped. */
export function parseSegment(b: Buffer, init: Mp4Init): Mp4Frame[] {
  const byId = new Map(init.tracks.map((t) => [t.id, t]));
  const frames: Mp4Frame[] = [];
  for (const moof of boxes(b, 0, b.length)) {
    if (moof.type !== 'moof') continue;
    for (const traf of boxes(b, moof.body, moof.end)) {
      if (traf.type !== 'traf') continue;
      const tfhd = child(b, traf, 'tfhd');
      if (!tfhd || tfhd.end - tfhd.body < 8) continue;
      const tf = b.readUInt32BE(tfhd.body) & 0xffffff;
      const track = byId.get(b.readUInt32BE(tfhd.body + 4));
      if (!track) continue;
      let o = tfhd.body + 8;
      let base = moof.start; // default-base-is-moof, and the usual case without a base offset
      if (tf & 0x01) {
        base = Number(b.readBigUInt64BE(o));
        o += 8;
      }
      if (tf & 0x02) o += 4;
      let dur = track.defaultDuration;
      let size = track.defaultSize;
      let flags = track.defaultFlags;
      if (tf & 0x08) {
        dur = b.readUInt32BE(o);
        o += 4;
      }
      if (tf & 0x10) {
        size = b.readUInt32BE(o);
        o += 4;
      }
      if (tf & 0x20) flags = b.readUInt32BE(o);
      const tfdt = child(b, traf, 'tfdt');
      let time = 0;
      if (tfdt) {
        time =
          b[tfdt.body] === 1
            ? Number(b.readBigUInt64BE(tfdt.body + 4))
            : b.readUInt32BE(tfdt.body + 4);
      }
      let dataEnd = base; // runs without data_offset follow the previous run
      for (const trun of boxes(b, traf.body, traf.end)) {
        if (trun.type !== 'trun' || trun.end - trun.body < 8) continue;
        const v = b[trun.body]!;
        const rf = b.readUInt32BE(trun.body) & 0xffffff;
        const count = b.readUInt32BE(trun.body + 4);
        let p = trun.body + 8;
        let at = dataEnd;
        if (rf & 0x01) {
          at = base + b.readInt32BE(p);
          p += 4;
        }
        let firstFlags = -1;
        if (rf & 0x04) {
          firstFlags = b.readUInt32BE(p);
          p += 4;
        }
        const per =
          (rf & 0x100 ? 4 : 0) + (rf & 0x200 ? 4 : 0) + (rf & 0x400 ? 4 : 0) + (rf & 0x800 ? 4 : 0);
        if (count * per > trun.end - p || (per === 0 && count > b.length)) continue;
        for (let i = 0; i < count; i++) {
          let d = dur;
          let s = size;
          let f = i === 0 && firstFlags >= 0 ? firstFlags : flags;
          let cto = 0;
          if (rf & 0x100) {
            d = b.readUInt32BE(p);
            p += 4;
          }
          if (rf & 0x200) {
            s = b.readUInt32BE(p);
            p += 4;
          }
          if (rf & 0x400) {
            f = b.readUInt32BE(p);
            p += 4;
          }
          if (rf & 0x800) {
            cto = v === 0 ? b.readUInt32BE(p) : b.readInt32BE(p);
            p += 4;
          }
          if (at < 0 || at + s > b.length) break;
          frames.push({
            trackId: track.id,
            dts: time,
            pts: time + cto,
            key:
              track.codec === 'h264' || track.codec === 'hevc' ? !(f & SAMPLE_IS_NON_SYNC) : true,
            data: b.subarray(at, at + s),
          });
          at += s;
          time += d;
        }
        dataEnd = at;
      }
    }
  }
  const scale = new Map(init.tracks.map((t) => [t.id, t.timescale]));
  frames.sort((x, y) => x.dts / scale.get(x.trackId)! - y.dts / scale.get(y.trackId)!);
  return frames;
}
