// Test helper: a small DVB subtitle (EN 300 743) encoder. ffmpeg 5.1 refuses text → bitmap
// subtitle encoding, so the text is drawn by ffmpeg's drawtext into a grey picture and we code
// that picture as a display set: page and region composition, a CLUT, one object of 4-bit
// pixel-code strings, a display definition and the end segment, in a PES of data_identifier 0x20.
import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import { pts5 } from './teletext.ts';

const run = promisify(execFile);

/** Draw `text` (lines split by \n) white with a black border on black: one byte per pixel. */
export async function drawText(
  text: string,
  width: number,
  height: number,
): Promise<{ width: number; height: number; grey: Buffer }> {
  const lines = text.split('\n');
  const filters = lines.map(
    (l, i) =>
      `drawtext=fontfile=/usr/share/fonts/truetype/dejavu/DejaVuSans.ttf:text='${l.replace(/[':\\]/g, '')}':fontcolor=white:borderw=2:bordercolor=black:fontsize=28:x=(w-text_w)/2:y=${10 + i * 40}`,
  );
  const { stdout } = await run(
    'ffmpeg',
    [
      ...['-hide_banner', '-loglevel', 'error', '-f', 'lavfi'],
      ...['-i', `color=c=black:s=${width}x${height}:d=1`, '-vf', filters.join(',')],
      ...['-frames:v', '1', '-pix_fmt', 'gray', '-f', 'rawvideo', '-'],
    ],
    { encoding: 'buffer', maxBuffer: 1 << 24 },
  );
  return { width, height, grey: stdout as Buffer };
}

export class BitWriter {
  bytes: number[] = [];
  private cur = 0;
  private n = 0;
  put(v: number, bits: number): void {
    for (let i = bits - 1; i >= 0; i--) {
      this.cur = (this.cur << 1) | ((v >> i) & 1);
      if (++this.n === 8) {
        this.bytes.push(this.cur);
        this.cur = 0;
        this.n = 0;
      }
    }
  }
  align(): void {
    while (this.n) this.put(0, 1);
  }
}

/** One run of a 4-bit/pixel code string (EN 300 743 7.2.5.2). */
export function put4bitRun(w: BitWriter, code: number, length: number): void {
  let n = length;
  while (n > 0) {
    if (code !== 0 && n <= 3) {
      for (; n > 0; n--) w.put(code, 4);
    } else if (code === 0 && n === 1) {
      w.put(0, 4);
      w.put(0b1100, 4);
      n = 0;
    } else if (code === 0 && n === 2) {
      w.put(0, 4);
      w.put(0b1101, 4);
      n = 0;
    } else if (code === 0 && n <= 9) {
      w.put(0, 4);
      w.put(0, 1);
      w.put(n - 2, 3);
      n = 0;
    } else if (n <= 7) {
      w.put(0, 4);
      w.put(0b10, 2);
      w.put(n - 4, 2);
      w.put(code, 4);
      n = 0;
    } else if (n === 8) {
      put4bitRun(w, code, 4);
      n = 4;
    } else if (n <= 24) {
      w.put(0, 4);
      w.put(0b1110, 4);
      w.put(n - 9, 4);
      w.put(code, 4);
      n = 0;
    } else {
      const m = Math.min(n, 280);
      w.put(0, 4);
      w.put(0b1111, 4);
      w.put(m - 25, 8);
      w.put(code, 4);
      n -= m;
    }
  }
}

/** Pixel data of the lines y0, y0+2, … of a code picture (one code per pixel). */
function field(codes: Uint8Array, width: number, height: number, y0: number): Buffer {
  const out: number[] = [];
  for (let y = y0; y < height; y += 2) {
    const w = new BitWriter();
    let x = 0;
    while (x < width) {
      const c = codes[y * width + x]!;
      let n = 1;
      while (x + n < width && codes[y * width + x + n] === c) n++;
      put4bitRun(w, c, n);
      x += n;
    }
    w.put(0, 4);
    w.put(0, 1);
    w.put(0, 3); // end of string
    w.align();
    out.push(0x11, ...w.bytes, 0xf0); // 4-bit string, end of object line
  }
  return Buffer.from(out);
}

function segment(type: number, page: number, data: Buffer): Buffer {
  const h = Buffer.from([0x0f, type, page >> 8, page & 0xff, data.length >> 8, data.length & 0xff]);
  return Buffer.concat([h, data]);
}

export interface SubtitlePicture {
  /** Pixel codes 0 (transparent) .. 15, width × height. */
  codes: Uint8Array;
  width: number;
  height: number;
  /** Top-left corner on the 720×576 display. */
  x: number;
  y: number;
}

/** Pixel codes of a drawn picture: 1 (white) where bright, 2 (black) for the dark border, 0
 *  transparent elsewhere. */
export function codesOf(p: { width: number; height: number; grey: Buffer }): Uint8Array {
  const codes = new Uint8Array(p.width * p.height);
  for (let i = 0; i < codes.length; i++) codes[i] = p.grey[i]! >= 128 ? 1 : 0;
  return codes;
}

/** The segments of one display set on composition page `page` (version counts sets). */
export function displaySet(page: number, version: number, pic?: SubtitlePicture): Buffer {
  const v = (version & 0xf) << 4;
  const parts: Buffer[] = [];
  parts.push(segment(0x14, page, Buffer.from([v | 0x07, 0x02, 0xcf, 0x02, 0x3f]))); // 720×576
  if (!pic) {
    parts.push(segment(0x10, page, Buffer.from([10, v | 0x03]))); // no region: clear
    parts.push(segment(0x80, page, Buffer.alloc(0)));
    return Buffer.concat(parts);
  }
  const pageComp = Buffer.alloc(2 + 6);
  pageComp[0] = 10; // page_time_out, seconds
  pageComp[1] = v | (1 << 2) | 0x03; // acquisition point
  pageComp[2] = 0; // region 0
  pageComp[3] = 0xff;
  pageComp.writeUInt16BE(pic.x, 4);
  pageComp.writeUInt16BE(pic.y, 6);
  parts.push(segment(0x10, page, pageComp));
  const region = Buffer.alloc(10 + 6);
  region[0] = 0;
  region[1] = v | 0x08 | 0x07; // fill
  region.writeUInt16BE(pic.width, 2);
  region.writeUInt16BE(pic.height, 4);
  region[6] = (2 << 5) | (2 << 2) | 0x03; // level 4-bit, depth 4-bit
  region[7] = 1; // CLUT 1
  region[8] = 0;
  region[9] = 0x03; // 4-bit fill code 0
  region.writeUInt16BE(7, 10); // object 7, type 0 (bitmap), at (0, 0)
  region.writeUInt16BE(0x0000, 12);
  region.writeUInt16BE(0xf000, 14);
  parts.push(segment(0x11, page, region));
  // CLUT 1: 1 white, 2 black (full range), 3 grey (reduced range, half transparent).
  parts.push(
    segment(
      0x12,
      page,
      Buffer.from([
        1,
        v | 0x0f,
        1,
        0x5f,
        235,
        128,
        128,
        0,
        2,
        0x5f,
        16,
        128,
        128,
        0,
        3,
        0x5e,
        0x82,
        0x22,
      ]),
    ),
  );
  const top = field(pic.codes, pic.width, pic.height, 0);
  const bottom = field(pic.codes, pic.width, pic.height, 1);
  const obj = Buffer.alloc(7);
  obj.writeUInt16BE(7, 0);
  obj[2] = v | 0x01; // coding method 0 (pixels)
  obj.writeUInt16BE(top.length, 3);
  obj.writeUInt16BE(bottom.length, 5);
  parts.push(segment(0x13, page, Buffer.concat([obj, top, bottom])));
  parts.push(segment(0x80, page, Buffer.alloc(0)));
  return Buffer.concat(parts);
}

/** A subtitle PES (stream_id private_stream_1) carrying segments. */
export function dvbSubtitlePes(segments: Buffer, pts: number): Buffer {
  const body = Buffer.concat([Buffer.from([0x20, 0x00]), segments, Buffer.from([0xff])]);
  const head = Buffer.concat([Buffer.from([0, 0, 1, 0xbd, 0, 0, 0x81, 0x80, 5]), pts5(pts, 0x2)]);
  const pes = Buffer.concat([head, body]);
  pes.writeUInt16BE(pes.length - 6, 4);
  return pes;
}

/** subtitling_descriptor with one service. */
export function subtitlingDescriptor(language: string, page: number, ancillary = page): Buffer {
  return Buffer.from([
    0x59,
    8,
    ...Buffer.from(language, 'latin1'),
    0x10,
    page >> 8,
    page & 0xff,
    ancillary >> 8,
    ancillary & 0xff,
  ]);
}

/** The words of an OCR'd or expected line, lower case, punctuation dropped (what OCR tests
 *  compare: recognised text may differ in case and punctuation). */
export function words(s: string): string[] {
  return s
    .toLowerCase()
    .replace(/[^a-z0-9\s]/g, ' ')
    .split(/\s+/)
    .filter(Boolean);
}
