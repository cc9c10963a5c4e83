// EN 300 743 decoder on crafted segments: pixel-code strings, CLUTs, regions, display sets,
// and the picture handed to OCR; the ISO 639 → tesseract language rule.
import t from 'tap';
import {
  Bits,
  type DisplaySet,
  DvbSubtitleDecoder,
  decode2bit,
  decode4bit,
  decode8bit,
  toPgm,
} from '../../src/ott/webvtt/dvbsub.ts';
import { cleanOcrText, tesseractLanguage } from '../../src/ott/webvtt/ocr.ts';
import { BitWriter, displaySet, put4bitRun } from '../helpers/dvbsub.ts';

function runs(
  decode: (b: Bits, put: (c: number, n: number) => void) => void,
  bytes: number[],
): [number, number][] {
  const out: [number, number][] = [];
  const buf = Buffer.from(bytes);
  decode(new Bits(buf, 0, buf.length), (c, n) => out.push([c, n]));
  return out;
}

t.test('2-bit/pixel code string: every code form', async (t) => {
  const w = new BitWriter();
  w.put(0b01, 2); // one pixel of 1
  w.put(0b00, 2);
  w.put(1, 1);
  w.put(5, 3);
  w.put(0b10, 2); // 3..10: 8 pixels of 2
  w.put(0b00, 2);
  w.put(0, 1);
  w.put(1, 1); // one pixel of 0
  w.put(0b00, 2);
  w.put(0, 1);
  w.put(0, 1);
  w.put(0b01, 2); // two pixels of 0
  w.put(0b00, 2);
  w.put(0, 1);
  w.put(0, 1);
  w.put(0b10, 2);
  w.put(3, 4);
  w.put(0b11, 2); // 15 × 3
  w.put(0b00, 2);
  w.put(0, 1);
  w.put(0, 1);
  w.put(0b11, 2);
  w.put(100, 8);
  w.put(0b01, 2); // 129
  w.put(0b00, 2);
  w.put(0, 1);
  w.put(0, 1);
  w.put(0b00, 2); // end
  w.align();
  t.same(runs(decode2bit, w.bytes), [
    [1, 1],
    [2, 8],
    [0, 1],
    [0, 2],
    [3, 15],
    [1, 129],
  ]);
});

t.test('4-bit/pixel code string: every run length round-trips', async (t) => {
  for (const code of [0, 5, 15]) {
    const w = new BitWriter();
    const lengths = Array.from({ length: 300 }, (_, i) => i + 1);
    for (const n of lengths) {
      put4bitRun(w, code, n);
      put4bitRun(w, code === 1 ? 2 : 1, 1); // a separator of another colour
    }
    w.put(0, 4);
    w.put(0, 4); // end of string
    w.align();
    const decoded = runs(decode4bit, w.bytes);
    // Expand and compare pixel by pixel.
    const want: number[] = [];
    for (const n of lengths) want.push(...Array(n).fill(code), code === 1 ? 2 : 1);
    const got: number[] = [];
    for (const [c, n] of decoded) got.push(...Array(n).fill(c));
    t.same(got, want, `code ${code}`);
  }
});

t.test('8-bit/pixel code string', async (t) => {
  const bytes = [
    0x42, // one pixel of 0x42
    0x00,
    0x05, // 0 + 0000101: five pixels of 0
    0x00,
    0x83,
    0x99, // 1 + 0000011: three pixels of 0x99
    0x00,
    0x00, // end
  ];
  t.same(runs(decode8bit, bytes), [
    [0x42, 1],
    [0, 5],
    [0x99, 3],
  ]);
});

function decodeAll(page: number, segments: Buffer[], pts = 900): DisplaySet[] {
  const sets: DisplaySet[] = [];
  const d = new DvbSubtitleDecoder(page, page, (s) => sets.push(s));
  segments.forEach((seg, i) => {
    d.push(Buffer.concat([Buffer.from([0x20, 0x00]), seg, Buffer.from([0xff])]), pts + i * 9000);
  });
  return sets;
}

t.test('a display set: region placed, CLUT applied, both fields, cropped', async (t) => {
  // 6×4 picture: a 2×2 white block at (1,1) with a grey pixel at (4,2).
  const width = 6;
  const height = 4;
  const codes = new Uint8Array(width * height);
  codes[1 * width + 1] = 1;
  codes[1 * width + 2] = 1;
  codes[2 * width + 1] = 1;
  codes[2 * width + 2] = 2; // black (opaque)
  codes[2 * width + 4] = 3; // grey, two-thirds transparent
  const sets = decodeAll(3, [
    displaySet(3, 0, { codes, width, height, x: 100, y: 460 }),
    displaySet(3, 1),
  ]);
  t.equal(sets.length, 2);
  const [shown, cleared] = sets as [DisplaySet, DisplaySet];
  t.equal(shown.pts, 900);
  t.equal(shown.timeout, 10);
  t.equal(shown.displayHeight, 576);
  const img = shown.image!;
  t.same([img.x, img.y, img.width, img.height], [101, 461, 4, 2], 'cropped to the visible');
  t.same([...img.luma], [235, 235, 0, 0, 235, 16, 0, 0x80]);
  t.same([...img.alpha], [255, 255, 0, 0, 255, 255, 0, 85]);
  t.equal(cleared.image, undefined, 'a page without regions clears the screen');
  t.equal(cleared.pts, 9900);

  // Text dark on light: white opaque → 0, black and transparent → 255, with the margin.
  const pgm = toPgm(img, 1);
  const head = 'P5\n6 4\n255\n';
  t.equal(pgm.toString('latin1', 0, head.length), head);
  const px = [...pgm.subarray(head.length)];
  t.same(px.slice(6, 12), [255, 0, 0, 255, 255, 255]);
  t.same(px.slice(12, 18), [255, 0, 255, 255, 255, 255]);
});

t.test('segments of other pages are ignored', async (t) => {
  const codes = new Uint8Array([1, 1, 1, 1]);
  const sets = decodeAll(5, [displaySet(4, 0, { codes, width: 2, height: 2, x: 0, y: 0 })]);
  t.equal(sets.length, 0, 'page 4 is not ours');
});

t.test('tesseract language from ISO 639', async (t) => {
  const have = new Set(['eng', 'deu', 'fra']);
  t.equal(tesseractLanguage('ger', have), 'deu', 'ISO 639-2/B mapped to /T');
  t.equal(tesseractLanguage('deu', have), 'deu');
  t.equal(tesseractLanguage('FRE', have), 'fra');
  t.equal(tesseractLanguage('pol', have), 'eng', 'not installed: English');
  t.equal(tesseractLanguage(undefined, have), 'eng');
  t.equal(cleanOcrText('  Hello   world \n\n  second\f\n'), 'Hello world\nsecond');
});
