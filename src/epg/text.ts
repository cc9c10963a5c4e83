// DVB text decoding per ETSI EN 300 468 Annex A: the first byte(s) select the character table
// (default: table 00, ISO/IEC 6937 with the euro sign), then control codes are applied
// (0x8A = CR/LF becomes "\n"; 0x86/0x87 emphasis on/off are dropped: output is plain text).

import { TextDecoder } from 'node:util';

const CR_LF = 0x8a;
const UNICODE_CONTROL_BASE = 0xe080; // single-byte controls 0x80..0x9F map to U+E080..U+E09F

/** Selector byte 0x01..0x0B → ISO/IEC 8859 part (0x08 would be part 12, which does not exist). */
const SINGLE_BYTE_SELECTOR: Record<number, number> = {
  1: 5,
  2: 6,
  3: 7,
  4: 8,
  5: 9,
  6: 10,
  7: 11,
  9: 13,
  10: 14,
  11: 15,
};

// Table 00 (ISO/IEC 6937 + euro at 0xA4), 0xA0..0xFF; 0 = unassigned (dropped).
// 0xC1..0xCF are non-spacing diacritics handled separately.
const T6937_HIGH: number[] = [
  0x00a0, 0x00a1, 0x00a2, 0x00a3, 0x20ac, 0x00a5, 0x0023, 0x00a7, 0x00a4, 0x2018, 0x201c, 0x00ab,
  0x2190, 0x2191, 0x2192, 0x2193, 0x00b0, 0x00b1, 0x00b2, 0x00b3, 0x00d7, 0x00b5, 0x00b6, 0x00b7,
  0x00f7, 0x2019, 0x201d, 0x00bb, 0x00bc, 0x00bd, 0x00be, 0x00bf, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0,
  0, 0, 0, 0, 0, 0x2015, 0x00b9, 0x00ae, 0x00a9, 0x2122, 0x266a, 0x00ac, 0x00a6, 0, 0, 0, 0, 0x215b,
  0x215c, 0x215d, 0x215e, 0x2126, 0x00c6, 0x0110, 0x00aa, 0x0126, 0, 0x0132, 0x013f, 0x0141, 0x00d8,
  0x0152, 0x00ba, 0x00de, 0x0166, 0x014a, 0x0149, 0x0138, 0x00e6, 0x0111, 0x00f0, 0x0127, 0x0131,
  0x0133, 0x0140, 0x0142, 0x00f8, 0x0153, 0x00df, 0x00fe, 0x0167, 0x014b, 0x00ad,
];

/** Non-spacing diacritic bytes of ISO/IEC 6937 → Unicode combining marks. */
const T6937_DIACRITIC: Record<number, number> = {
  193: 0x0300, // grave
  194: 0x0301, // acute
  195: 0x0302, // circumflex
  196: 0x0303, // tilde
  197: 0x0304, // macron
  198: 0x0306, // breve
  199: 0x0307, // dot above
  200: 0x0308, // diaeresis
  202: 0x030a, // ring above
  203: 0x0327, // cedilla
  205: 0x030b, // double acute
  206: 0x0328, // ogonek
  207: 0x030c, // caron
};

const decoders = new Map<string, TextDecoder>();
function decoder(label: string): TextDecoder {
  let d = decoders.get(label);
  if (!d) {
    d = new TextDecoder(label);
    decoders.set(label, d);
  }
  return d;
}

/** Decode a DVB text field (event name, description, item, …). */
export function decodeDvbText(buf: Uint8Array): string {
  if (buf.length === 0) return '';
  const first = buf[0]!;
  if (first >= 0x20) return decode6937(buf);
  const body = buf.subarray(1);
  const part = SINGLE_BYTE_SELECTOR[first];
  if (part !== undefined) return decodeSingleByte(body, part);
  switch (first) {
    case 0x10: {
      // 0x10 0x00 0xNN: ISO/IEC 8859-NN.
      const n = buf.length >= 3 ? (buf[1]! << 8) | buf[2]! : 0;
      return n >= 1 && n <= 15 ? decodeSingleByte(buf.subarray(3), n) : '';
    }
    case 0x11:
      return applyUnicodeControls(decoder('utf-16be').decode(body));
    case 0x12:
      return applyUnicodeControls(decoder('euc-kr').decode(body));
    case 0x13:
      return applyUnicodeControls(decoder('gbk').decode(body));
    case 0x14:
      return applyUnicodeControls(decoder('utf-16be').decode(body)); // Big5 subset of ISO 10646
    case 0x15:
      return applyUnicodeControls(decoder('utf-8').decode(body));
    default:
      // 0x1F (compressed text) and reserved selectors: not decodable here.
      return '';
  }
}

function decode6937(buf: Uint8Array): string {
  let out = '';
  for (let i = 0; i < buf.length; i++) {
    const b = buf[i]!;
    if (b < 0x80) {
      if (b >= 0x20 && b !== 0x7f) out += String.fromCharCode(b);
      continue;
    }
    if (b < 0xa0) {
      if (b === CR_LF) out += '\n';
      continue;
    }
    const mark = T6937_DIACRITIC[b];
    if (mark !== undefined) {
      const base = buf[i + 1];
      if (base !== undefined && base >= 0x20 && base < 0x7f) {
        out += (String.fromCharCode(base) + String.fromCharCode(mark)).normalize('NFC');
        i++;
      }
      continue;
    }
    const cp = T6937_HIGH[b - 0xa0]!;
    if (cp) out += String.fromCharCode(cp);
  }
  return out;
}

function decodeSingleByte(buf: Uint8Array, part: number): string {
  // 0x80..0x9F are DVB control codes in every single-byte table: handle them here, decode the
  // printable runs between them (the WHATWG labels for some parts map to windows-125x, which
  // only differ from ISO 8859 in that range).
  let out = '';
  let runStart = 0;
  const flush = (end: number) => {
    if (end > runStart) out += decodeRun(buf.subarray(runStart, end), part);
  };
  for (let i = 0; i < buf.length; i++) {
    const b = buf[i]!;
    if ((b >= 0x80 && b < 0xa0) || b < 0x20) {
      flush(i);
      if (b === CR_LF) out += '\n';
      runStart = i + 1;
    }
  }
  flush(buf.length);
  return out;
}

function decodeRun(run: Uint8Array, part: number): string {
  if (part === 1) return String.fromCharCode(...run);
  return decoder(`iso-8859-${part}`).decode(run);
}

function applyUnicodeControls(s: string): string {
  let out = '';
  for (const ch of s) {
    const cp = ch.codePointAt(0)!;
    if (cp >= UNICODE_CONTROL_BASE && cp < UNICODE_CONTROL_BASE + 0x20) {
      if (cp === UNICODE_CONTROL_BASE + (CR_LF - 0x80)) out += '\n';
      continue;
    }
    if (cp < 0x20 && cp !== 0x0a) continue;
    out += ch;
  }
  return out;
}

/** Encode text as table 00 (ISO/IEC 6937) — the inverse of the decoder, for tests and tools.
 *  Letters with a diacritic become mark byte + base letter. */
export function encode6937(s: string): Buffer {
  const high = new Map<number, number>();
  T6937_HIGH.forEach((cp, i) => {
    if (cp) high.set(cp, 0xa0 + i);
  });
  const markByte = new Map<number, number>();
  for (const [b, m] of Object.entries(T6937_DIACRITIC)) markByte.set(m, Number(b));
  const out: number[] = [];
  for (const ch of s) {
    const cp = ch.codePointAt(0)!;
    if (ch === '\n') out.push(CR_LF);
    else if (cp >= 0x20 && cp < 0x7f) out.push(cp);
    else if (high.has(cp)) out.push(high.get(cp)!);
    else {
      const [base, mark] = [...ch.normalize('NFD')].map((c) => c.codePointAt(0)!);
      if (base !== undefined && mark !== undefined && markByte.has(mark) && base < 0x7f) {
        out.push(markByte.get(mark)!, base);
      } else out.push(0x3f);
    }
  }
  return Buffer.from(out);
}
