// Test helper: crafts EN 300 706 teletext subtitle pages carried per EN 300 472 (PES with
// data_identifier 0x10, data units 0x03) and muxes them into an ffmpeg-made TS, adding the
// teletext ES with its descriptor to the PMT. ffmpeg cannot encode teletext, so we do.
import { g0Char } from '../../src/ott/webvtt/charset.ts';
import { HAMMING_84, ham2418, reverseBits, withParity } from '../../src/ott/webvtt/hamming.ts';

const TS = 188;
const ROW = 40;

export interface SubtitlePage {
  /** 90 kHz PTS of the PES carrying the page. */
  pts: number;
  /** Rows of cells: strings with control characters (`\x0b` start box …). Empty = clear. */
  rows: { row: number; text: string }[];
  national?: number;
  /** X/26 diacritics: character at row/column with a mark (1 grave, 2 acute, 8 umlaut …). */
  diacritics?: { row: number; col: number; code: number; mark: number }[];
}

export const BOX = '\x0b\x0b';
export const END_BOX = '\x0a\x0a';
export const DOUBLE = '\x0d';
export const YELLOW = '\x03';
export const CYAN = '\x06';

function crc32mpeg(b: Buffer): number {
  let crc = 0xffffffff;
  for (const byte of b) {
    crc ^= byte << 24;
    for (let i = 0; i < 8; i++) crc = crc & 0x80000000 ? (crc << 1) ^ 0x04c11db7 : crc << 1;
  }
  return crc >>> 0;
}

/** Encode text for a row under a national subset (reverse of the decoder's table). */
function cells(text: string, national: number): number[] {
  const reverse = new Map<string, number>();
  for (let c = 0x20; c < 0x80; c++)
    if (!reverse.has(g0Char(c, national))) reverse.set(g0Char(c, national), c);
  const out = [...text].map((ch) =>
    ch.charCodeAt(0) < 0x20 ? ch.charCodeAt(0) : (reverse.get(ch) ?? 0x3f),
  );
  while (out.length < ROW) out.push(0x20);
  return out.slice(0, ROW);
}

function packet(magazine: number, n: number, data: number[]): Buffer {
  const p = [HAMMING_84[(magazine & 7) | ((n & 1) << 3)]!, HAMMING_84[n >> 1]!, ...data];
  return Buffer.from(p);
}

function header(magazine: number, pageByte: number, national: number): Buffer {
  const c12to14 =
    (((national >> 2) & 1) << 1) | (((national >> 1) & 1) << 2) | ((national & 1) << 3);
  const ctrl = [
    pageByte & 0xf,
    pageByte >> 4,
    0,
    0x8, // S2 with C4: erase page
    0,
    0x8, // S4 with C6: subtitle
    0x1, // C7: suppress header
    c12to14,
  ].map((v) => HAMMING_84[v]!);
  const text = Array.from({ length: 32 }, () => withParity(0x20));
  return packet(magazine, 0, [...ctrl, ...text]);
}

function enhancement(magazine: number, d: SubtitlePage['diacritics'] & object): Buffer {
  const bytes: number[] = [HAMMING_84[0]!]; // designation code 0
  const list: number[] = [];
  let row = -1;
  for (const x of d) {
    if (x.row !== row) {
      row = x.row;
      list.push((40 + row) | (0x04 << 6)); // set active position: row
    }
    list.push(x.col | ((0x10 + x.mark) << 6) | (x.code << 11));
  }
  while (list.length < 13) list.push(63 | (0x1f << 6)); // termination marker
  for (const v of list.slice(0, 13)) bytes.push(...ham2418(v));
  return packet(magazine, 26, bytes);
}

/** The 42-byte packets of one page transmission. */
export function pagePackets(magazine: number, pageByte: number, p: SubtitlePage): Buffer[] {
  const national = p.national ?? 0;
  const out = [header(magazine, pageByte, national)];
  if (p.diacritics?.length) out.push(enhancement(magazine, p.diacritics));
  for (const r of p.rows)
    out.push(
      packet(
        magazine,
        r.row,
        cells(r.text, national).map((c) => withParity(c)),
      ),
    );
  // A time-filling header (page FF) ends the transmission at once, as subtitle inserters do.
  out.push(header(magazine, 0xff, national));
  return out;
}

export function pts5(pts: number, marker: number): Buffer {
  const b = Buffer.alloc(5);
  b[0] = (marker << 4) | ((Math.floor(pts / 2 ** 30) & 0x7) << 1) | 1;
  const mid = Math.floor(pts / 2 ** 15) & 0x7fff;
  b[1] = mid >> 7;
  b[2] = ((mid & 0x7f) << 1) | 1;
  const low = pts & 0x7fff;
  b[3] = low >> 7;
  b[4] = ((low & 0x7f) << 1) | 1;
  return b;
}

/** EN 300 472 PES: header padded to 45 bytes, data_identifier 0x10, units of 46 bytes. */
export function teletextPes(pkts: Buffer[], pts: number): Buffer {
  const units: Buffer[] = pkts.map((p, i) =>
    Buffer.concat([
      Buffer.from([0x03, 0x2c, 0xe0 | (7 + i), 0xe4]),
      Buffer.from(p.map(reverseBits)),
    ]),
  );
  // 45-byte header + 1 + 46 × n must be a multiple of 184: pad with stuffing units.
  while ((46 + 46 * units.length) % 184 !== 0)
    units.push(Buffer.concat([Buffer.from([0xff, 0x2c]), Buffer.alloc(44, 0xff)]));
  const body = Buffer.concat([Buffer.from([0x10]), ...units]);
  const head = Buffer.concat([
    Buffer.from([0, 0, 1, 0xbd, 0, 0, 0x84, 0x80, 0x24]),
    pts5(pts, 0x2),
    Buffer.alloc(0x24 - 5, 0xff),
  ]);
  const pes = Buffer.concat([head, body]);
  pes.writeUInt16BE(pes.length - 6, 4);
  return pes;
}

function tsPackets(pid: number, pes: Buffer, cc: { n: number }): Buffer[] {
  const out: Buffer[] = [];
  for (let o = 0; o < pes.length; o += 184) {
    const p = Buffer.alloc(TS, 0xff);
    p[0] = 0x47;
    p[1] = (o === 0 ? 0x40 : 0) | (pid >> 8);
    p[2] = pid & 0xff;
    p[3] = 0x10 | (cc.n++ & 0xf);
    pes.copy(p, 4, o, Math.min(pes.length, o + 184));
    out.push(p);
  }
  return out;
}

function readPts(b: Buffer, o: number): number {
  return (
    ((b[o]! >> 1) & 7) * 2 ** 30 +
    ((b[o + 1]! << 7) | (b[o + 2]! >> 1)) * 2 ** 15 +
    ((b[o + 3]! << 7) | (b[o + 4]! >> 1))
  );
}

export interface MuxOptions {
  pid: number;
  magazine: number;
  pageByte: number;
  language: string;
  /** Page times in seconds after the first video PTS. */
  pages: (Omit<SubtitlePage, 'pts'> & { at: number })[];
}

/** Add a teletext ES to an ffmpeg TS: new PMT entry + PES inserted by PTS order. */
export function muxTeletext(ts: Buffer, o: MuxOptions): { ts: Buffer; firstVideoPts: number } {
  const lang = Buffer.from(o.language, 'latin1');
  return muxPrivatePes(ts, {
    pid: o.pid,
    descriptors: Buffer.from([0x56, 5, ...lang, (2 << 3) | (o.magazine & 7), o.pageByte]),
    pes: o.pages.map((page) => ({
      at: page.at,
      build: (pts: number) =>
        teletextPes(pagePackets(o.magazine, o.pageByte, { ...page, pts }), pts),
    })),
  });
}

export interface PrivatePesOptions {
  pid: number;
  /** ES_info descriptors of the new PMT entry (stream_type 0x06). */
  descriptors: Buffer;
  /** PES to insert, `at` seconds after the first video PTS, built for their PTS. */
  pes: { at: number; build: (pts: number) => Buffer }[];
}

/** Add a private-data ES (stream_type 0x06) to an ffmpeg TS: new PMT entry + PES inserted
 *  by PTS order. */
export function muxPrivatePes(
  ts: Buffer,
  o: PrivatePesOptions,
): { ts: Buffer; firstVideoPts: number } {
  let pmtPid = -1;
  let videoPid = -1;
  let firstVideoPts = -1;
  const cc = { n: 0 };
  const out: Buffer[] = [];
  const queue = [...o.pes].sort((a, b) => a.at - b.at);
  for (let i = 0; i + TS <= ts.length; i += TS) {
    const p = ts.subarray(i, i + TS);
    const pid = ((p[1]! & 0x1f) << 8) | p[2]!;
    const pusi = (p[1]! & 0x40) !== 0;
    const payload = p[3]! & 0x20 ? 5 + p[4]! : 4;
    if (pid === 0 && pusi) {
      const s = payload + 1 + p[payload]!;
      pmtPid = ((p[s + 10]! & 0x1f) << 8) | p[s + 11]!;
    } else if (pid === pmtPid && pusi) {
      out.push(rewritePmt(p, payload, o));
      continue;
    } else if (
      pusi &&
      p[payload] === 0 &&
      p[payload + 1] === 0 &&
      p[payload + 2] === 1 &&
      (p[payload + 3]! & 0xf0) === 0xe0
    ) {
      if (videoPid < 0) videoPid = pid;
      if (pid === videoPid && p[payload + 7]! & 0x80) {
        const pts = readPts(p, payload + 9);
        if (firstVideoPts < 0) firstVideoPts = pts;
        while (queue.length && firstVideoPts + queue[0]!.at * 90000 <= pts) {
          const item = queue.shift()!;
          const at = firstVideoPts + Math.round(item.at * 90000);
          out.push(...tsPackets(o.pid, item.build(at), cc));
        }
      }
    }
    out.push(p);
  }
  return { ts: Buffer.concat(out), firstVideoPts };
}

function rewritePmt(p: Buffer, payload: number, o: PrivatePesOptions): Buffer {
  const s = payload + 1 + p[payload]!;
  const len = ((p[s + 1]! & 0x0f) << 8) | p[s + 2]!;
  const body = Buffer.from(p.subarray(s, s + 3 + len - 4)); // without CRC
  const es = Buffer.concat([
    Buffer.from([0x06, 0xe0 | (o.pid >> 8), o.pid & 0xff, 0xf0, o.descriptors.length]),
    o.descriptors,
  ]);
  const section = Buffer.concat([body, es]);
  const newLen = section.length + 4 - 3;
  section[1] = (section[1]! & 0xf0) | (newLen >> 8);
  section[2] = newLen & 0xff;
  const crc = Buffer.alloc(4);
  crc.writeUInt32BE(crc32mpeg(section));
  const out = Buffer.alloc(TS, 0xff);
  p.copy(out, 0, 0, s);
  Buffer.concat([section, crc]).copy(out, s);
  return out;
}
