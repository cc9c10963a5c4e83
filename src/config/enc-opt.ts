// A transcoder's `enc-opt` (`key1=value1:key2=value2`): extra encoder settings, taken only from
// an allow-list per encoder so that none can add an input, an output, a filter graph, a file or a
// protocol to the encoder's command (docs/transcoder.md, "enc-opt"). The same rule refuses the
// config (validation) and builds the argv (src/inputs/transcoder/args.ts).
import type { PositionIndex } from './json.ts';
import { listAt } from './references.ts';
import { isPlainObject } from './schema.ts';
import type { ConfigIssue } from './types.ts';

/** enc-type → the encoder family whose options apply. */
export type EncoderFamily = 'mpeg2' | 'x264' | 'x265';

export function encoderFamily(encType: number): EncoderFamily {
  return encType === 0 ? 'mpeg2' : encType === 2 ? 'x265' : 'x264';
}

/** Encoder-internal settings (rate control, analysis, tools, signalling). None reads or writes
 *  a file (x264's `stats`, `qpfile`, `cqmfile`, `dump-yuv`; x265's `csv`, `analysis-*`,
 *  `qpfile`, `zonefile` … are left out on purpose), and the options sluice sets from the enc-*
 *  fields (bitrate, GOP, B-frames, look-ahead, preset) are left out so the fields stay true. */
export const ENC_OPT_KEYS: Readonly<Record<EncoderFamily, ReadonlySet<string>>> = {
  x264: new Set([
    'aq-mode',
    'aq-strength',
    'b-adapt',
    'b-bias',
    'b-pyramid',
    'cabac',
    'chroma-qp-offset',
    'colormatrix',
    'colorprim',
    'deblock',
    'direct',
    'fast-pskip',
    'level',
    'me',
    'merange',
    'mixed-refs',
    'nal-hrd',
    'no-8x8dct',
    'no-dct-decimate',
    'no-weightb',
    'nr',
    'open-gop',
    'partitions',
    'psy',
    'psy-rd',
    'qcomp',
    'qpmax',
    'qpmin',
    'qpstep',
    'ref',
    'slices',
    'subme',
    'threads',
    'transfer',
    'trellis',
    'tune',
    'weightp',
    'aud',
    'intra-refresh',
    'sliced-threads',
    'vbv-init',
    'ipratio',
    'pbratio',
  ]),
  x265: new Set([
    'aq-mode',
    'aq-strength',
    'b-adapt',
    'b-pyramid',
    'colormatrix',
    'colorprim',
    'ctu',
    'deblock',
    'frame-threads',
    'level-idc',
    'max-merge',
    'me',
    'merange',
    'no-sao',
    'pools',
    'psy-rd',
    'psy-rdoq',
    'qcomp',
    'qpmax',
    'qpmin',
    'rd',
    'ref',
    'repeat-headers',
    'aud',
    'hrd',
    'subme',
    'transfer',
    'tu-inter-depth',
    'tu-intra-depth',
    'wpp',
    'weightb',
    'weightp',
  ]),
  // mpeg2video's own AVOptions, each given as `-key value` to the encoder.
  mpeg2: new Set([
    'intra_vlc',
    'non_linear_quant',
    'alternate_scan',
    'dc',
    'qmin',
    'qmax',
    'mbd',
    'trellis',
    'seq_disp_ext',
    'video_format',
    'a53cc',
    'mpeg_quant',
    'qscale',
  ]),
};

/** A key: letters, digits, `-` and `_`, starting with a letter. A value: letters, digits and
 *  `. , + -` (no `/`, `=`, `:`, quote, space or `;`: nothing that names a path, a URL, another
 *  option or a filter chain). */
const KEY = /^[a-z][a-z0-9_-]{0,39}$/;
const VALUE = /^[A-Za-z0-9.,+-]{1,64}$/;

export interface EncOptPair {
  key: string;
  value: string;
}

/** The pairs of `text`, or why it is refused (a message naming the first wrong pair). */
export function parseEncOpt(
  text: string,
  family: EncoderFamily,
): { pairs: EncOptPair[] } | { error: string } {
  const pairs: EncOptPair[] = [];
  if (text.trim() === '') return { pairs };
  for (const item of text.split(':')) {
    const eq = item.indexOf('=');
    const key = eq < 0 ? item : item.slice(0, eq);
    const value = eq < 0 ? '' : item.slice(eq + 1);
    if (!KEY.test(key)) {
      return { error: `enc-opt: ${JSON.stringify(item)} is not key=value (key: a-z, 0-9, - or _)` };
    }
    if (!ENC_OPT_KEYS[family].has(key)) {
      return {
        error: `enc-opt: ${key} is not an allowed ${familyName(family)} option (only encoder settings that add no input, output, filter, file or protocol: docs/transcoder.md)`,
      };
    }
    if (!VALUE.test(value)) {
      return {
        error: `enc-opt: the value of ${key} must be 1 to 64 of letters, digits and . , + - (got ${JSON.stringify(value)})`,
      };
    }
    pairs.push({ key, value });
  }
  return { pairs };
}

function familyName(family: EncoderFamily): string {
  return family === 'mpeg2' ? 'MPEG-2' : family === 'x265' ? 'HEVC (x265)' : 'H.264 (x264)';
}

/** Every transcoder input of the config whose enc-opt breaks the rule, with its pointer. */
export function encOptIssues(doc: unknown, positions: PositionIndex): ConfigIssue[] {
  const out: ConfigIssue[] = [];
  for (const { rec, pointer } of listAt(doc, ['stream'])) {
    const inputs = rec['input'];
    if (!Array.isArray(inputs)) continue;
    inputs.forEach((input, i) => {
      if (!isPlainObject(input) || input['type'] !== 'transcoder') return;
      const text = input['enc-opt'];
      if (typeof text !== 'string') return; // the schema says what is wrong
      const encType = typeof input['enc-type'] === 'number' ? input['enc-type'] : 1;
      const r = parseEncOpt(text, encoderFamily(encType));
      if (!('error' in r)) return;
      const at = `${pointer}/input/${i}/enc-opt`;
      out.push({
        severity: 'error',
        pointer: at,
        rule: 'enc-opt',
        message: r.error,
        value: text,
        ...positions.locateNearest(at),
      });
    });
  }
  return out;
}
