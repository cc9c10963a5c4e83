// DVB subtitles (EN 300 743) → bitmaps: the segments of a subtitle PES (page composition,
// region composition, CLUT definition, object data, display definition, end of display set)
// are kept per page; each display set is rendered as one grey/alpha picture of its visible
// regions (the union of their rectangles) for OCR. Objects coded as character strings give
// their text directly. A display set replaces the previous one; a page with no region ends it.

/** PES data_identifier and subtitle_stream_id of DVB subtitles. */
const DATA_IDENTIFIER = 0x20;
const SYNC_BYTE = 0x0f;
const END_OF_PES = 0xff;
const SEG_PAGE = 0x10;
const SEG_REGION = 0x11;
const SEG_CLUT = 0x12;
const SEG_OBJECT = 0x13;
const SEG_DISPLAY = 0x14;
const SEG_END = 0x80;
const PAGE_STATE_MODE_CHANGE = 2;
const OBJECT_PIXELS = 0;
const OBJECT_CHARACTERS = 1;
const BLOCK_2BIT = 0x10;
const BLOCK_4BIT = 0x11;
const BLOCK_8BIT = 0x12;
const BLOCK_MAP_2TO4 = 0x20;
const BLOCK_MAP_2TO8 = 0x21;
const BLOCK_MAP_4TO8 = 0x22;
const BLOCK_END_OF_LINE = 0xf0;
/** Display size when no display definition segment is sent (EN 300 743 5.1.4). */
const DEFAULT_WIDTH = 720;
const DEFAULT_HEIGHT = 576;

/** One CLUT entry as luminance and opacity (0 transparent .. 255 opaque). */
export interface Colour {
  y: number;
  a: number;
}

export interface Clut {
  version: number;
  /** Indexed by pixel code, one table per depth. */
  e2: Colour[];
  e4: Colour[];
  e8: Colour[];
}

export interface Region {
  id: number;
  version: number;
  width: number;
  height: number;
  /** 2, 4 or 8 bits per pixel. */
  depth: number;
  clut: number;
  /** Pixel codes, width × height, in the region's depth. */
  pixels: Uint8Array;
  /** Text of character-coded objects placed in the region. */
  text: string[];
  objects: { id: number; x: number; y: number }[];
}

export interface DisplaySet {
  /** Unwrapped 90 kHz PTS of the PES that began it. */
  pts: number;
  /** page_time_out in seconds: the longest the set stays on screen. */
  timeout: number;
  displayWidth: number;
  displayHeight: number;
  /** The rendered picture of the visible regions; undefined when nothing is shown. */
  image?: SubtitleImage;
  /** Character-coded text, when the objects carried it (no OCR needed). */
  text?: string;
}

export interface SubtitleImage {
  /** Where the picture sits on the display. */
  x: number;
  y: number;
  width: number;
  height: number;
  /** Luminance, width × height. */
  luma: Uint8Array;
  /** Opacity, width × height. */
  alpha: Uint8Array;
}

// --- default CLUTs (EN 300 743 10) ------------------------------------------------------

function rgbToY(r: number, g: number, b: number): number {
  return Math.round(0.299 * r + 0.587 * g + 0.114 * b);
}

function defaultClut(): Clut {
  const e2: Colour[] = [
    { y: 0, a: 0 },
    { y: 255, a: 255 },
    { y: 0, a: 255 },
    { y: 127, a: 255 },
  ];
  const e4: Colour[] = [];
  for (let i = 0; i < 16; i++) {
    const v = i < 8 ? 255 : 127;
    const c = (bit: number) => (i & bit ? v : 0);
    e4.push({ y: rgbToY(c(1), c(2), c(4)), a: i === 0 ? 0 : 255 });
  }
  const e8: Colour[] = [{ y: 0, a: 0 }];
  for (let i = 1; i < 256; i++) {
    let r: number;
    let g: number;
    let b: number;
    let a = 255;
    const lo = (bit: number, hi: number, l: number, h: number) =>
      (i & bit ? l : 0) + (i & hi ? h : 0);
    if (i < 8) {
      r = i & 1 ? 255 : 0;
      g = i & 2 ? 255 : 0;
      b = i & 4 ? 255 : 0;
      a = 64;
    } else {
      switch (i & 0x88) {
        case 0x00:
          r = lo(1, 0x10, 85, 170);
          g = lo(2, 0x20, 85, 170);
          b = lo(4, 0x40, 85, 170);
          break;
        case 0x08:
          r = lo(1, 0x10, 85, 170);
          g = lo(2, 0x20, 85, 170);
          b = lo(4, 0x40, 85, 170);
          a = 128;
          break;
        case 0x80:
          r = 127 + lo(1, 0x10, 43, 85);
          g = 127 + lo(2, 0x20, 43, 85);
          b = 127 + lo(4, 0x40, 43, 85);
          break;
        default:
          r = lo(1, 0x10, 43, 85);
          g = lo(2, 0x20, 43, 85);
          b = lo(4, 0x40, 43, 85);
      }
    }
    e8.push({ y: rgbToY(r, g, b), a });
  }
  return { version: -1, e2, e4, e8 };
}

const DEFAULT_CLUT = defaultClut();
const MAP_2TO4 = [0x0, 0x7, 0x8, 0xf];
const MAP_2TO8 = [0x00, 0x77, 0x88, 0xff];
const MAP_4TO8 = Array.from({ length: 16 }, (_, i) => i * 0x11);

// --- pixel-data sub-blocks (EN 300 743 7.2.5.1) -----------------------------------------

export class Bits {
  private bit = 0;
  constructor(
    private b: Buffer,
    public pos: number,
    private end: number,
  ) {}
  read(n: number): number {
    let v = 0;
    for (let i = 0; i < n; i++) {
      if (this.pos >= this.end) return v << (n - i);
      v = (v << 1) | ((this.b[this.pos]! >> (7 - this.bit)) & 1);
      if (++this.bit === 8) {
        this.bit = 0;
        this.pos++;
      }
    }
    return v;
  }
  align(): void {
    if (this.bit) {
      this.bit = 0;
      this.pos++;
    }
  }
  get done(): boolean {
    return this.pos >= this.end;
  }
}

/** Decode one 2-bit/pixel code string: calls `put(code, run)`; returns at end of string. */
export function decode2bit(bits: Bits, put: (code: number, run: number) => void): void {
  while (!bits.done) {
    const c = bits.read(2);
    if (c !== 0) {
      put(c, 1);
      continue;
    }
    if (bits.read(1) === 1) {
      const run = bits.read(3) + 3;
      put(bits.read(2), run);
      continue;
    }
    if (bits.read(1) === 1) {
      put(0, 1);
      continue;
    }
    const sw3 = bits.read(2);
    if (sw3 === 0) break;
    if (sw3 === 1) put(0, 2);
    else if (sw3 === 2) {
      const run = bits.read(4) + 12;
      put(bits.read(2), run);
    } else {
      const run = bits.read(8) + 29;
      put(bits.read(2), run);
    }
  }
  bits.align();
}

/** Decode one 4-bit/pixel code string. */
export function decode4bit(bits: Bits, put: (code: number, run: number) => void): void {
  while (!bits.done) {
    const c = bits.read(4);
    if (c !== 0) {
      put(c, 1);
      continue;
    }
    if (bits.read(1) === 0) {
      const n = bits.read(3);
      if (n === 0) break;
      put(0, n + 2);
      continue;
    }
    if (bits.read(1) === 0) {
      const run = bits.read(2) + 4;
      put(bits.read(4), run);
      continue;
    }
    const sw3 = bits.read(2);
    if (sw3 === 0) put(0, 1);
    else if (sw3 === 1) put(0, 2);
    else if (sw3 === 2) {
      const run = bits.read(4) + 9;
      put(bits.read(4), run);
    } else {
      const run = bits.read(8) + 25;
      put(bits.read(4), run);
    }
  }
  bits.align();
}

/** Decode one 8-bit/pixel code string. */
export function decode8bit(bits: Bits, put: (code: number, run: number) => void): void {
  while (!bits.done) {
    const c = bits.read(8);
    if (c !== 0) {
      put(c, 1);
      continue;
    }
    if (bits.read(1) === 0) {
      const n = bits.read(7);
      if (n === 0) break;
      put(0, n);
    } else {
      const run = bits.read(7);
      put(bits.read(8), run);
    }
  }
}

/** Paint one field of an object's pixel data into a region at (x, y), every other line. */
function paintField(
  region: Region,
  b: Buffer,
  start: number,
  end: number,
  x0: number,
  y0: number,
): void {
  let map2to4 = MAP_2TO4;
  let map2to8 = MAP_2TO8;
  let map4to8 = MAP_4TO8;
  let x = x0;
  let y = y0;
  const bits = new Bits(b, start, end);
  const put = (depth: number) => (code: number, run: number) => {
    let v = code;
    if (depth === 2 && region.depth === 4) v = map2to4[code]!;
    else if (depth === 2 && region.depth === 8) v = map2to8[code]!;
    else if (depth === 4 && region.depth === 8) v = map4to8[code]!;
    else if (depth > region.depth) v = code & ((1 << region.depth) - 1);
    if (y < 0 || y >= region.height) {
      x += run;
      return;
    }
    const row = y * region.width;
    for (let i = 0; i < run && x < region.width; i++, x++) if (x >= 0) region.pixels[row + x] = v;
  };
  while (!bits.done) {
    const type = bits.read(8);
    switch (type) {
      case BLOCK_2BIT:
        decode2bit(bits, put(2));
        break;
      case BLOCK_4BIT:
        decode4bit(bits, put(4));
        break;
      case BLOCK_8BIT:
        decode8bit(bits, put(8));
        break;
      case BLOCK_MAP_2TO4:
        map2to4 = [bits.read(4), bits.read(4), bits.read(4), bits.read(4)];
        break;
      case BLOCK_MAP_2TO8:
        map2to8 = [bits.read(8), bits.read(8), bits.read(8), bits.read(8)];
        break;
      case BLOCK_MAP_4TO8:
        map4to8 = Array.from({ length: 16 }, () => bits.read(8));
        break;
      case BLOCK_END_OF_LINE:
        x = x0;
        y += 2;
        break;
      default:
        return; // unknown data type: the rest of the field cannot be parsed
    }
  }
}

// --- the page decoder ---------------------------------------------------------------------

interface PageState {
  timeout: number;
  version: number;
  regions: { id: number; x: number; y: number }[];
}

/**
 * Decodes the subtitle PES of one composition page (plus its ancillary page: shared CLUTs and
 * objects) and reports each complete display set.
 */
export class DvbSubtitleDecoder {
  private regions = new Map<number, Region>();
  private cluts = new Map<number, Clut>();
  private page?: PageState;
  private displayWidth = DEFAULT_WIDTH;
  private displayHeight = DEFAULT_HEIGHT;
  /** A display set is being received (page composition seen, not yet reported). */
  private pending?: number;

  constructor(
    private compositionPage: number,
    private ancillaryPage: number,
    private onDisplaySet: (set: DisplaySet) => void,
  ) {}

  /** One PES payload with its unwrapped PTS. */
  push(data: Buffer, pts: number): void {
    if (data.length < 2 || data[0] !== DATA_IDENTIFIER) return;
    let o = 2;
    while (o + 6 <= data.length && data[o] === SYNC_BYTE) {
      const type = data[o + 1]!;
      const pageId = data.readUInt16BE(o + 2);
      const len = data.readUInt16BE(o + 4);
      const start = o + 6;
      const end = Math.min(data.length, start + len);
      o = start + len;
      if (pageId !== this.compositionPage && pageId !== this.ancillaryPage) continue;
      this.segment(type, data, start, end, pts);
    }
    if (o < data.length && data[o] !== END_OF_PES) return;
    // Sets without an end segment end with their PES (older encoders omit it).
    if (this.pending !== undefined) this.emit();
  }

  /** The set being received is complete now (a splice cuts the stream). */
  flush(): void {
    if (this.pending !== undefined) this.emit();
  }

  private segment(type: number, b: Buffer, s: number, e: number, pts: number): void {
    switch (type) {
      case SEG_PAGE:
        this.pageComposition(b, s, e, pts);
        break;
      case SEG_REGION:
        this.regionComposition(b, s, e);
        break;
      case SEG_CLUT:
        this.clutDefinition(b, s, e);
        break;
      case SEG_OBJECT:
        this.objectData(b, s, e);
        break;
      case SEG_DISPLAY:
        if (e - s >= 5) {
          this.displayWidth = b.readUInt16BE(s + 1) + 1;
          this.displayHeight = b.readUInt16BE(s + 3) + 1;
        }
        break;
      case SEG_END:
        if (this.pending !== undefined) this.emit();
        break;
    }
  }

  private pageComposition(b: Buffer, s: number, e: number, pts: number): void {
    if (e - s < 2) return;
    if (this.pending !== undefined) this.emit();
    const state = (b[s + 1]! >> 2) & 3;
    if (state === PAGE_STATE_MODE_CHANGE) {
      // A new epoch: everything of the previous one is gone.
      this.regions.clear();
      this.cluts.clear();
    }
    const regions: PageState['regions'] = [];
    for (let o = s + 2; o + 6 <= e; o += 6)
      regions.push({ id: b[o]!, x: b.readUInt16BE(o + 2), y: b.readUInt16BE(o + 4) });
    this.page = { timeout: b[s]!, version: b[s + 1]! >> 4, regions };
    this.pending = pts;
  }

  private regionComposition(b: Buffer, s: number, e: number): void {
    if (e - s < 10) return;
    const id = b[s]!;
    const version = b[s + 1]! >> 4;
    const fill = (b[s + 1]! & 0x08) !== 0;
    const width = b.readUInt16BE(s + 2);
    const height = b.readUInt16BE(s + 4);
    const depthCode = (b[s + 6]! >> 2) & 7;
    const depth = depthCode === 1 ? 2 : depthCode === 3 ? 8 : 4;
    const clut = b[s + 7]!;
    const fillCode = depth === 8 ? b[s + 8]! : depth === 4 ? b[s + 9]! >> 4 : (b[s + 9]! >> 2) & 3;
    let r = this.regions.get(id);
    if (!r || r.width !== width || r.height !== height || r.depth !== depth) {
      r = {
        id,
        version,
        width,
        height,
        depth,
        clut,
        pixels: new Uint8Array(width * height),
        text: [],
        objects: [],
      };
      r.pixels.fill(fillCode);
      this.regions.set(id, r);
    } else if (fill) r.pixels.fill(fillCode);
    r.version = version;
    r.clut = clut;
    r.objects = [];
    r.text = [];
    for (let o = s + 10; o + 6 <= e; ) {
      const objectId = b.readUInt16BE(o);
      const objectType = b[o + 2]! >> 6;
      const x = b.readUInt16BE(o + 2) & 0x0fff;
      const y = b.readUInt16BE(o + 4) & 0x0fff;
      r.objects.push({ id: objectId, x, y });
      o += objectType === 1 || objectType === 2 ? 8 : 6;
    }
  }

  private clutDefinition(b: Buffer, s: number, e: number): void {
    if (e - s < 2) return;
    const id = b[s]!;
    const base = this.cluts.get(id) ?? DEFAULT_CLUT;
    const clut: Clut = {
      version: b[s + 1]! >> 4,
      e2: [...base.e2],
      e4: [...base.e4],
      e8: [...base.e8],
    };
    for (let o = s + 2; o + 2 <= e; ) {
      const entry = b[o]!;
      const flags = b[o + 1]!;
      let y: number;
      let t: number;
      if (flags & 1) {
        if (o + 6 > e) break;
        y = b[o + 2]!;
        t = b[o + 5]!;
        o += 6;
      } else {
        if (o + 4 > e) break;
        y = b[o + 2]! & 0xfc;
        t = (b[o + 3]! & 3) * 0x55;
        o += 4;
      }
      // Y = 0 is full transparency (EN 300 743 7.2.4).
      const c = { y, a: y === 0 ? 0 : 255 - t };
      if (flags & 0x80 && entry < 4) clut.e2[entry] = c;
      if (flags & 0x40 && entry < 16) clut.e4[entry] = c;
      if (flags & 0x20) clut.e8[entry] = c;
    }
    this.cluts.set(id, clut);
  }

  private objectData(b: Buffer, s: number, e: number): void {
    if (e - s < 3) return;
    const id = b.readUInt16BE(s);
    const method = (b[s + 2]! >> 2) & 3;
    for (const r of this.regions.values()) {
      for (const p of r.objects) {
        if (p.id !== id) continue;
        if (method === OBJECT_PIXELS && e - s >= 7) {
          const topLen = b.readUInt16BE(s + 3);
          const bottomLen = b.readUInt16BE(s + 5);
          const top = s + 7;
          paintField(r, b, top, Math.min(e, top + topLen), p.x, p.y);
          if (bottomLen > 0)
            paintField(r, b, top + topLen, Math.min(e, top + topLen + bottomLen), p.x, p.y + 1);
          else paintField(r, b, top, Math.min(e, top + topLen), p.x, p.y + 1);
        } else if (method === OBJECT_CHARACTERS && e - s >= 4) {
          const n = b[s + 3]!;
          const codes: number[] = [];
          for (let i = 0; i < n && s + 4 + 2 * i + 2 <= e; i++)
            codes.push(b.readUInt16BE(s + 4 + 2 * i));
          r.text.push(String.fromCharCode(...codes));
        }
      }
    }
  }

  private emit(): void {
    const pts = this.pending!;
    this.pending = undefined;
    const page = this.page!;
    const set: DisplaySet = {
      pts,
      timeout: page.timeout,
      displayWidth: this.displayWidth,
      displayHeight: this.displayHeight,
    };
    const shown = page.regions
      .map((p) => ({ p, r: this.regions.get(p.id) }))
      .filter((x): x is { p: PageState['regions'][number]; r: Region } => x.r !== undefined);
    const text = shown.flatMap((x) => x.r.text).join('\n');
    if (text) set.text = text;
    set.image = this.render(shown);
    this.onDisplaySet(set);
  }

  /** The visible regions on one picture, cropped to what is not transparent. */
  private render(shown: { p: { x: number; y: number }; r: Region }[]): SubtitleImage | undefined {
    if (shown.length === 0) return undefined;
    let x0 = Number.POSITIVE_INFINITY;
    let y0 = Number.POSITIVE_INFINITY;
    let x1 = 0;
    let y1 = 0;
    for (const { p, r } of shown) {
      x0 = Math.min(x0, p.x);
      y0 = Math.min(y0, p.y);
      x1 = Math.max(x1, p.x + r.width);
      y1 = Math.max(y1, p.y + r.height);
    }
    const w = x1 - x0;
    const h = y1 - y0;
    if (w <= 0 || h <= 0) return undefined;
    const luma = new Uint8Array(w * h);
    const alpha = new Uint8Array(w * h);
    let any = false;
    for (const { p, r } of shown) {
      const clut = this.cluts.get(r.clut) ?? DEFAULT_CLUT;
      const table = r.depth === 2 ? clut.e2 : r.depth === 4 ? clut.e4 : clut.e8;
      for (let y = 0; y < r.height; y++) {
        const dst = (p.y - y0 + y) * w + (p.x - x0);
        for (let x = 0; x < r.width; x++) {
          const c = table[r.pixels[y * r.width + x]!] ?? DEFAULT_CLUT.e8[0]!;
          luma[dst + x] = c.y;
          alpha[dst + x] = c.a;
          if (c.a) any = true;
        }
      }
    }
    if (!any) return undefined;
    return crop({ x: x0, y: y0, width: w, height: h, luma, alpha });
  }
}

/** Trim fully transparent rows and columns around the picture. */
function crop(img: SubtitleImage): SubtitleImage {
  const { width: w, height: h, alpha } = img;
  let top = 0;
  let bottom = h - 1;
  let left = w;
  let right = -1;
  const rowEmpty = (y: number) => {
    for (let x = 0; x < w; x++) if (alpha[y * w + x]) return false;
    return true;
  };
  while (top < h && rowEmpty(top)) top++;
  while (bottom > top && rowEmpty(bottom)) bottom--;
  for (let y = top; y <= bottom; y++)
    for (let x = 0; x < w; x++)
      if (alpha[y * w + x]) {
        if (x < left) left = x;
        if (x > right) right = x;
      }
  const cw = right - left + 1;
  const ch = bottom - top + 1;
  if (cw === w && ch === h) return img;
  const luma = new Uint8Array(cw * ch);
  const a = new Uint8Array(cw * ch);
  for (let y = 0; y < ch; y++) {
    const src = (top + y) * w + left;
    luma.set(img.luma.subarray(src, src + cw), y * cw);
    a.set(alpha.subarray(src, src + cw), y * cw);
  }
  return { x: img.x + left, y: img.y + top, width: cw, height: ch, luma, alpha: a };
}

/**
 * The picture as text dark on light for OCR: composited over black (what a viewer sees),
 * inverted and thresholded, with a margin, as a binary PGM (P5).
 */
export function toPgm(img: SubtitleImage, margin = 10): Buffer {
  const w = img.width + 2 * margin;
  const h = img.height + 2 * margin;
  const head = Buffer.from(`P5\n${w} ${h}\n255\n`, 'latin1');
  const out = Buffer.alloc(head.length + w * h, 255);
  head.copy(out);
  for (let y = 0; y < img.height; y++)
    for (let x = 0; x < img.width; x++) {
      const i = y * img.width + x;
      const v = (img.luma[i]! * img.alpha[i]!) / 255;
      out[head.length + (y + margin) * w + x + margin] = v >= 128 ? 0 : 255;
    }
  return out;
}
