// Internal language ids of the EPG, with their ISO 639-1 / ISO 639-2 (B and T) codes and names.
// Ids are stable (never renumbered): databases store them. 0 means "no dictionary mapping".

export interface Language {
  id: number;
  /** ISO 639-1 two-letter code, empty when the language has none. */
  iso1: string;
  /** ISO 639-2 bibliographic code (the one DVB descriptors use). */
  iso2b: string;
  /** ISO 639-2 terminology code, equal to iso2b for most languages. */
  iso2t: string;
  name: string;
}

/** Language id stored when a source language code is not in the dictionary. */
export const UNKNOWN_LANGUAGE = 0;

// [iso1, iso2b, iso2t, name]; the id is the position + 1. Append only.
const TABLE: [string, string, string, string][] = [
  ['en', 'eng', 'eng', 'English'],
  ['de', 'ger', 'deu', 'German'],
  ['fr', 'fre', 'fra', 'French'],
  ['es', 'spa', 'spa', 'Spanish'],
  ['it', 'ita', 'ita', 'Italian'],
  ['pt', 'por', 'por', 'Portuguese'],
  ['nl', 'dut', 'nld', 'Dutch'],
  ['ru', 'rus', 'rus', 'Russian'],
  ['uk', 'ukr', 'ukr', 'Ukrainian'],
  ['pl', 'pol', 'pol', 'Polish'],
  ['cs', 'cze', 'ces', 'Czech'],
  ['sk', 'slo', 'slk', 'Slovak'],
  ['hu', 'hun', 'hun', 'Hungarian'],
  ['ro', 'rum', 'ron', 'Romanian'],
  ['bg', 'bul', 'bul', 'Bulgarian'],
  ['el', 'gre', 'ell', 'Greek'],
  ['tr', 'tur', 'tur', 'Turkish'],
  ['sv', 'swe', 'swe', 'Swedish'],
  ['no', 'nor', 'nor', 'Norwegian'],
  ['da', 'dan', 'dan', 'Danish'],
  ['fi', 'fin', 'fin', 'Finnish'],
  ['is', 'ice', 'isl', 'Icelandic'],
  ['et', 'est', 'est', 'Estonian'],
  ['lv', 'lav', 'lav', 'Latvian'],
  ['lt', 'lit', 'lit', 'Lithuanian'],
  ['sl', 'slv', 'slv', 'Slovenian'],
  ['hr', 'hrv', 'hrv', 'Croatian'],
  ['sr', 'srp', 'srp', 'Serbian'],
  ['bs', 'bos', 'bos', 'Bosnian'],
  ['mk', 'mac', 'mkd', 'Macedonian'],
  ['sq', 'alb', 'sqi', 'Albanian'],
  ['be', 'bel', 'bel', 'Belarusian'],
  ['ka', 'geo', 'kat', 'Georgian'],
  ['hy', 'arm', 'hye', 'Armenian'],
  ['az', 'aze', 'aze', 'Azerbaijani'],
  ['kk', 'kaz', 'kaz', 'Kazakh'],
  ['uz', 'uzb', 'uzb', 'Uzbek'],
  ['ar', 'ara', 'ara', 'Arabic'],
  ['he', 'heb', 'heb', 'Hebrew'],
  ['fa', 'per', 'fas', 'Persian'],
  ['ur', 'urd', 'urd', 'Urdu'],
  ['hi', 'hin', 'hin', 'Hindi'],
  ['bn', 'ben', 'ben', 'Bengali'],
  ['ta', 'tam', 'tam', 'Tamil'],
  ['th', 'tha', 'tha', 'Thai'],
  ['vi', 'vie', 'vie', 'Vietnamese'],
  ['id', 'ind', 'ind', 'Indonesian'],
  ['ms', 'may', 'msa', 'Malay'],
  ['zh', 'chi', 'zho', 'Chinese'],
  ['ja', 'jpn', 'jpn', 'Japanese'],
  ['ko', 'kor', 'kor', 'Korean'],
  ['ca', 'cat', 'cat', 'Catalan'],
  ['eu', 'baq', 'eus', 'Basque'],
  ['gl', 'glg', 'glg', 'Galician'],
  ['ga', 'gle', 'gle', 'Irish'],
  ['cy', 'wel', 'cym', 'Welsh'],
  ['mt', 'mlt', 'mlt', 'Maltese'],
  ['lb', 'ltz', 'ltz', 'Luxembourgish'],
  ['af', 'afr', 'afr', 'Afrikaans'],
  ['sw', 'swa', 'swa', 'Swahili'],
  ['', 'qaa', 'qaa', 'Original language'],
  ['', 'mul', 'mul', 'Multiple languages'],
  ['', 'und', 'und', 'Undetermined'],
];

export const LANGUAGES: readonly Language[] = TABLE.map(([iso1, iso2b, iso2t, name], i) => ({
  id: i + 1,
  iso1,
  iso2b,
  iso2t,
  name,
}));

const byCode = new Map<string, Language>();
for (const l of LANGUAGES) {
  for (const c of [l.iso1, l.iso2b, l.iso2t]) if (c) byCode.set(c, l);
}

/** Language by ISO 639-1 or ISO 639-2 (B or T) code, case-insensitive; regional suffixes
 *  such as `en-GB` or `pt_BR` are ignored. */
export function languageByCode(code: string): Language | undefined {
  const base = code.trim().toLowerCase().split(/[-_]/)[0] ?? '';
  return byCode.get(base);
}

export function languageById(id: number): Language | undefined {
  return Number.isInteger(id) && id >= 1 ? LANGUAGES[id - 1] : undefined;
}

/** Internal id for a code, or UNKNOWN_LANGUAGE. */
export function languageId(code: string | undefined | null): number {
  if (!code) return UNKNOWN_LANGUAGE;
  return languageByCode(code)?.id ?? UNKNOWN_LANGUAGE;
}

/** The code written to XMLTV `lang` attributes: ISO 639-1 when it exists, else 639-2. */
export function xmltvLangCode(id: number): string {
  const l = languageById(id);
  return l ? l.iso1 || l.iso2b : '';
}
