// Teletext character sets (EN 300 706 §15): the G0 Latin set with the national option subsets
// chosen by the page header's C12–C14 bits, and the diacritical marks of the G2 column 4
// used by X/26 enhancement triplets. Output is Unicode.

/** The 13 positions a national option subset replaces (EN 300 706 table 36). */
const NATIONAL_POSITIONS = [
  0x23, 0x24, 0x40, 0x5b, 0x5c, 0x5d, 0x5e, 0x5f, 0x60, 0x7b, 0x7c, 0x7d, 0x7e,
];

/**
 * National option subsets of the default G0 designation (table 33, C12 C13 C14 read as a
 * 3-bit number with C12 the most significant), characters in NATIONAL_POSITIONS order.
 */
const NATIONAL_SUBSETS: Record<number, string> = {
  0: '£$@←½→↑#―¼‖¾÷', // English
  1: '#$§ÄÖÜ^_°äöüß', // German
  2: '#¤ÉÄÖÅÜ_éäöåü', // Swedish / Finnish / Hungarian
  3: '£$é°ç→↑#ùàòèì', // Italian
  4: 'éïàëêùî#èâôûç', // French
  5: 'ç$¡áéíóú¿üñèà', // Portuguese / Spanish
  6: '#ůčťžýířéáěúš', // Czech / Slovak
};

export const NATIONAL_ENGLISH = 0;

/** Combining marks of G2 column 4 (0x41..0x4F), indexed by the X/26 mode − 0x10. */
const DIACRITICS = [
  '',
  '\u0300', // grave
  '\u0301', // acute
  '\u0302', // circumflex
  '\u0303', // tilde
  '\u0304', // macron
  '\u0306', // breve
  '\u0307', // dot above
  '\u0308', // umlaut
  '\u0323', // dot below
  '\u030a', // ring
  '\u0327', // cedilla
  '\u0332', // low line
  '\u030b', // double acute
  '\u0328', // ogonek
  '\u030c', // caron
];

/** A few G2 Latin supplementary characters subtitles use (EN 300 706 table 37). */
const G2_LATIN: Record<number, string> = {
  33: '¡',
  34: '¢',
  35: '£',
  36: '$',
  37: '¥',
  39: '§',
  40: '¤',
  41: '‘',
  42: '“',
  43: '«',
  48: '°',
  49: '±',
  50: '²',
  51: '³',
  52: '×',
  53: 'µ',
  54: '¶',
  55: '·',
  56: '÷',
  57: '’',
  58: '”',
  59: '»',
  60: '¼',
  61: '½',
  62: '¾',
  63: '¿',
  80: '―',
  81: '¹',
  82: '®',
  83: '©',
  84: '™',
  85: '♪',
  86: '€',
  106: 'Œ',
  122: 'œ',
  123: 'ß',
};

/** The Unicode text of a G0 character (0x20..0x7F) under a national option subset. */
export function g0Char(code: number, national: number): string {
  if (code === 0x7f) return '■'; // a full block in the Latin G0 set
  const i = NATIONAL_POSITIONS.indexOf(code);
  if (i >= 0) {
    const subset = NATIONAL_SUBSETS[national] ?? NATIONAL_SUBSETS[NATIONAL_ENGLISH]!;
    return [...subset][i]!;
  }
  return String.fromCharCode(code);
}

/** A G0 character with a diacritical mark from an X/26 triplet, composed (NFC). */
export function withDiacritic(code: number, mark: number): string {
  const base = String.fromCharCode(code);
  return (base + (DIACRITICS[mark] ?? '')).normalize('NFC');
}

export function g2Char(code: number): string {
  return G2_LATIN[code] ?? ' ';
}
