// Unit tests of the teletext layer: Hamming 8/4 and 24/18 (single errors corrected, double
// errors refused), odd parity, national subsets, and page → cue rendering rules.
import t from 'tap';
import { g0Char } from '../../src/ott/webvtt/charset.ts';
import { CueTrack, pageToCue } from '../../src/ott/webvtt/cues.ts';
import {
  HAMMING_84,
  ham2418,
  parity7,
  unham84,
  unham2418,
  withParity,
} from '../../src/ott/webvtt/hamming.ts';
import type { TeletextPage } from '../../src/ott/webvtt/teletext.ts';

t.test('Hamming 8/4 corrects one bit and refuses two', async (t) => {
  for (let n = 0; n < 16; n++) {
    t.equal(unham84(HAMMING_84[n]!), n);
    for (let b = 0; b < 8; b++)
      t.equal(unham84(HAMMING_84[n]! ^ (1 << b)), n, `nibble ${n} bit ${b}`);
    t.equal(unham84(HAMMING_84[n]! ^ 0x03), -1, 'two bits wrong');
  }
});

t.test('Hamming 24/18 corrects one bit and refuses two', async (t) => {
  for (const v of [0, 1, 0x2aaaa, 0x15555, 0x3ffff, 0x12345]) {
    const [a, b, c] = ham2418(v);
    const word = a | (b << 8) | (c << 16);
    t.equal(unham2418(a, b, c), v);
    for (let bit = 0; bit < 24; bit++) {
      const w = word ^ (1 << bit);
      t.equal(unham2418(w & 0xff, (w >> 8) & 0xff, w >> 16), v, `value ${v} bit ${bit}`);
    }
    const w2 = word ^ 0x000101;
    t.equal(unham2418(w2 & 0xff, (w2 >> 8) & 0xff, w2 >> 16), -1);
  }
});

t.test('odd parity and national subsets', async (t) => {
  t.equal(parity7(withParity(0x41)), 0x41);
  t.equal(parity7(withParity(0x41) ^ 0x80), -1);
  t.equal(g0Char(0x7b, 0b001), 'ä', 'German');
  t.equal(g0Char(0x23, 0b000), '£', 'English');
  t.equal(g0Char(0x40, 0b100), 'à', 'French');
  t.equal(g0Char(0x41, 0b110), 'A');
});

function page(rows: Record<number, string>, subtitle = true): TeletextPage {
  const m = new Map<number, Int16Array>();
  for (const [r, text] of Object.entries(rows)) {
    const cells = new Int16Array(40).fill(0x20);
    [...text].forEach((ch, i) => {
      cells[i] = ch.charCodeAt(0);
    });
    m.set(Number(r), cells);
  }
  return { page: 0x888, pts: 0, subtitle, national: 0, rows: m, enhancements: new Map() };
}

t.test('boxed text only, colours, double height, position', async (t) => {
  const cue = pageToCue(
    page({
      1: 'header junk',
      10: '\x0d\x0b\x0bBig\x0a\x0a',
      11: '\x0b\x0bhidden?',
      20: 'no box \x02\x0b\x0bgreen\x0a\x0a',
    }),
  )!;
  t.equal(
    cue.plain,
    'Big\ngreen',
    'outside boxes nothing shows; row 11 is under a double-height row',
  );
  t.equal(cue.text, 'Big\n<c.lime>green</c>');
  t.equal(cue.settings, 'line:40% align:center');
  t.equal(
    pageToCue(page({ 5: 'plain page' }, false))!.plain,
    'plain page',
    'non-subtitle page: all text',
  );
  t.equal(pageToCue(page({})), undefined);
});

t.test('cue track: repeats extend, updates replace, clears end', async (t) => {
  const track = new CueTrack();
  const c = (s: string) => ({ text: s, plain: s, settings: 'line:80% align:center' });
  track.update(100, c('a'));
  track.update(200, c('a'));
  track.update(300, c('b'));
  track.update(300, c('b2'));
  track.update(400, undefined);
  t.same(
    track.cues.map((x) => [x.start, x.end, x.content.text]),
    [
      [100, 300, 'a'],
      [300, 400, 'b2'],
    ],
  );
  t.same(track.between(350, 1000).length, 1);
});
