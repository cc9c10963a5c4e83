// Schema validation of a parsed config: ajv errors in plain words with pointer and line:column,
// the walker's checks of our own annotations (same-length, unique members, URL schemes) and the
// warnings the schema cannot express (unknown members with a "did you mean", lnb-polarization).
import type { ErrorObject } from 'ajv';
import type { PositionIndex } from './json.ts';
import { escapePointerToken, unescapePointerToken } from './json.ts';
import {
  configValidator,
  fieldsAlong,
  isPlainObject,
  itemsSchema,
  objectShape,
  rootSchema,
  type SchemaNode,
  sameLengthMismatch,
} from './schema.ts';
import { suggest } from './suggest.ts';
import type { ConfigIssue } from './types.ts';
import { urlProblem, urlRuleOf } from './url-rule.ts';

const TYPE_WORDS: Record<string, string> = {
  integer: 'an integer',
  number: 'a number',
  string: 'a string',
  boolean: 'true or false',
  object: 'an object',
  array: 'an array',
  null: 'null',
};

/** A value as shown in a message (short). */
export function show(v: unknown): string {
  const s = JSON.stringify(v);
  if (s === undefined) return String(v);
  return s.length > 60 ? `${s.slice(0, 57)}...` : s;
}

function tokens(pointer: string): string[] {
  return pointer === '' ? [] : pointer.slice(1).split('/').map(unescapePointerToken);
}

/** Name of the member a pointer ends at, for messages (`port`, `stream[3]`, `the document`). */
export function label(pointer: string): string {
  const t = tokens(pointer);
  if (t.length === 0) return 'the document';
  const last = t[t.length - 1]!;
  if (/^\d+$/.test(last) && t.length > 1) return `${t[t.length - 2]}[${last}]`;
  return last;
}

/** Locate an issue in the text and attach line:column. */
function place(issue: ConfigIssue, positions: PositionIndex, key: boolean): ConfigIssue {
  const pos = positions.locateNearest(issue.pointer, key);
  if (pos) {
    issue.line = pos.line;
    issue.column = pos.column;
  }
  return issue;
}

function conditionText(doc: unknown, pointer: string): string | undefined {
  const fields = fieldsAlong(rootSchema(), doc, tokens(pointer));
  const f = fields?.[fields.length - 1];
  return f?.schema['x-when'] as string | undefined;
}

function translate(
  e: ErrorObject,
  doc: unknown,
  positions: PositionIndex,
): ConfigIssue | undefined {
  const at = e.instancePath;
  const name = label(at);
  const v = e.data;
  const p = e.params as Record<string, unknown>;
  const parent = (e.parentSchema ?? {}) as SchemaNode;
  const issue = (rule: string, message: string, pointer = at, key = false): ConfigIssue =>
    place({ severity: 'error', pointer, rule, message, value: v }, positions, key);
  switch (e.keyword) {
    case 'if':
      return undefined; // the failing branch reports the real error
    case 'type':
      return issue(
        'type',
        `${name} must be ${TYPE_WORDS[String(p['type'])] ?? p['type']}, got ${show(v)}`,
      );
    case 'minimum': {
      const why = parent['x-minimum-text'] as string | undefined;
      return issue(
        'minimum',
        `${name} must be at least ${p['limit']}, got ${show(v)}${why ? ` (${why})` : ''}`,
      );
    }
    case 'maximum':
      return issue('maximum', `${name} must be at most ${p['limit']}, got ${show(v)}`);
    case 'enum': {
      const values = p['allowedValues'] as unknown[];
      const allowed = values.map(show).join(', ');
      // A misspelt word (an input type "udpp") gets the nearest allowed one suggested.
      const words = values.filter((x): x is string => typeof x === 'string' && x !== '');
      const near = typeof v === 'string' && v !== '' ? suggest(v, words) : undefined;
      const hint = near !== undefined ? ` (did you mean ${show(near)}?)` : '';
      return issue('enum', `${name} must be one of ${allowed}, got ${show(v)}${hint}`);
    }
    case 'const':
      return issue('const', `${name} must be ${show(p['allowedValue'])}, got ${show(v)}`);
    case 'required': {
      const missing = String(p['missingProperty']);
      const ptr = `${at}/${escapePointerToken(missing)}`;
      const what =
        isPlainObject(v) && typeof v['type'] === 'string'
          ? ` (a ${v['type']} ${name.replace(/\[\d+\]$/, '')} needs it)`
          : '';
      const is = issue('required', `${missing} is required${what}`, ptr);
      is.value = undefined;
      return is;
    }
    case 'additionalProperties': {
      const extra = String(p['additionalProperty']);
      const ptr = `${at}/${escapePointerToken(extra)}`;
      const known = Object.keys((parent['properties'] ?? {}) as object);
      const hint = suggest(extra, known);
      const where =
        at === ''
          ? 'unknown top-level member'
          : `unknown member in ${String(parent['title'] ?? name).toLowerCase()} record`;
      const is = issue(
        'unknown-member',
        `${where}: ${show(extra)}${hint ? ` (did you mean ${hint}?)` : ''}`,
        ptr,
        true,
      );
      is.value = isPlainObject(v) ? v[extra] : undefined;
      return is;
    }
    case 'minLength':
      return p['limit'] === 1
        ? issue('minLength', `${name} must not be empty`)
        : issue('minLength', `${name} must be at least ${p['limit']} characters long`);
    case 'maxLength':
      return issue(
        'maxLength',
        `${name} must be at most ${p['limit']} characters long, got ${show(v)}`,
      );
    case 'pattern': {
      const text = parent['x-pattern-text'] as string | undefined;
      return issue(
        'pattern',
        `${name} must be ${text ?? `text matching ${p['pattern']}`}, got ${show(v)}`,
      );
    }
    case 'not': {
      // `"not": { "const": x }` with the words of what is allowed instead.
      const text = parent['x-not-text'] as string | undefined;
      return issue('not', `${name} must be ${text ?? 'something else'}, got ${show(v)}`);
    }
    case 'minItems':
      return issue('minItems', `${name} must have at least ${p['limit']} item(s)`);
    case 'maxItems':
      return issue('maxItems', `${name} must have at most ${p['limit']} item(s)`);
    case 'uniqueItems': {
      const [a, b] = [Number(p['i']), Number(p['j'])].sort((x, y) => x - y);
      return issue(
        'uniqueItems',
        `${name} must not repeat a value (items ${a} and ${b} are equal)`,
      );
    }
    case 'false schema': {
      const cond = conditionText(doc, at);
      const is = issue(
        'not-allowed',
        `${name} is not allowed here${cond ? `: only when ${cond}` : ''}`,
        at,
        true,
      );
      return is;
    }
    default:
      return issue(e.keyword, `${name} ${e.message ?? 'is invalid'}`);
  }
}

/**
 * How much a rule says about a wrong member, most specific first. One mistake can break
 * several keywords at once (`"ott-hls": true` fails both `type` and `enum`); only the one that
 * says most about the fix is reported: a member that may not be there at all, then the exact
 * values allowed, then a bound or pattern, and the bare type last.
 */
const SPECIFICITY: Record<string, number> = {
  'not-allowed': 0,
  const: 1,
  enum: 1,
  type: 3,
};
const OTHER_RULES = 2;

/** The most specific issue per pointer, in the order they were found. */
function mostSpecific(issues: ConfigIssue[]): ConfigIssue[] {
  const rank = (i: ConfigIssue) => SPECIFICITY[i.rule] ?? OTHER_RULES;
  const best = new Map<string, ConfigIssue>();
  for (const i of issues) {
    const kept = best.get(i.pointer);
    if (!kept || rank(i) < rank(kept)) best.set(i.pointer, i);
  }
  return issues.filter((i) => best.get(i.pointer) === i);
}

/** Validate `doc` against the schema; every wrong member once, in plain words, with its
 *  position. */
export function schemaIssues(doc: unknown, positions: PositionIndex): ConfigIssue[] {
  const validate = configValidator();
  if (validate(doc)) return [];
  const out: ConfigIssue[] = [];
  for (const e of validate.errors ?? []) {
    const issue = translate(e, doc, positions);
    if (issue) out.push(issue);
  }
  return mostSpecific(out);
}

/** Items of an array of records that repeat an earlier item's `member` (`x-unique-member`). */
function repeatedMembers(
  list: unknown[],
  member: string,
  pointer: string,
  positions: PositionIndex,
): ConfigIssue[] {
  const out: ConfigIssue[] = [];
  const seen = new Map<unknown, number>();
  list.forEach((item, i) => {
    if (!isPlainObject(item) || item[member] === undefined) return;
    const v = item[member];
    const first = seen.get(v);
    if (first === undefined) {
      seen.set(v, i);
      return;
    }
    const issue: ConfigIssue = {
      severity: 'error',
      pointer: `${pointer}/${i}/${escapePointerToken(member)}`,
      rule: 'duplicate',
      message: `${member} ${show(v)} is already given to item ${first}`,
      value: v,
    };
    out.push(place(issue, positions, false));
  });
  return out;
}

/** What the schema walk finds: arrays that must agree in length (errors), and members the
 *  schema does not know in records that accept them (warnings, with a "did you mean"). */
export function walkIssues(doc: unknown, positions: PositionIndex): ConfigIssue[] {
  const out: ConfigIssue[] = [];
  /** Unknown members past MAX_UNKNOWN_LISTED: counted, not listed one by one. */
  let unlisted = 0;
  let listed = 0;
  const walk = (node: SchemaNode, value: unknown, pointer: string): void => {
    if (Array.isArray(value)) {
      const items = itemsSchema(node);
      if (!items) return;
      const unique = node['x-unique-member'];
      if (typeof unique === 'string')
        out.push(...repeatedMembers(value, unique, pointer, positions));
      value.forEach((el, i) => {
        walk(items, el, `${pointer}/${i}`);
      });
      return;
    }
    if (!isPlainObject(value)) return;
    const shape = objectShape(node, value);
    for (const rule of shape.sameLength) {
      const lengths = sameLengthMismatch(rule, value);
      if (!lengths) continue;
      const list = Object.entries(lengths)
        .map(([k, n]) => `${k} has ${n}`)
        .join(', ');
      const issue: ConfigIssue = {
        severity: 'error',
        pointer,
        rule: 'same-length',
        message: `${rule.arrays.join(', ')} must have the same number of items (${list})`,
      };
      out.push(place(issue, positions, false));
    }
    if (shape.fields.size === 0 && !shape.strict) return; // no members known: free-form
    // An input or output without a valid type has no field group yet: the schema error about
    // its type says it all, a warning per member would only bury it.
    const typeField = shape.fields.get('type');
    if (
      typeField &&
      shape.required.has('type') &&
      Array.isArray(typeField.schema['enum']) &&
      !typeField.schema['enum'].includes(value['type'])
    ) {
      return;
    }
    for (const [key, v] of Object.entries(value)) {
      const f = shape.fields.get(key);
      const ptr = `${pointer}/${escapePointerToken(key)}`;
      if (!f) {
        if (shape.strict) continue; // already an error from the schema
        if (listed >= MAX_UNKNOWN_LISTED) {
          unlisted++;
          continue;
        }
        listed++;
        const hint = suggest(key, shape.fields.keys());
        const issue: ConfigIssue = {
          severity: 'warning',
          pointer: ptr,
          rule: 'unknown-member',
          message: `unknown member ${show(key)} is ignored${hint ? ` (did you mean ${hint}?)` : ''}`,
          value: v,
        };
        out.push(place(issue, positions, true));
        continue;
      }
      if (f.forbidden) continue;
      if (v !== null && typeof v === 'object') walk(f.schema, v, ptr);
      const url = typeof v === 'string' ? urlRuleOf(f.schema) : undefined;
      const wrong = url && urlProblem(key, v as string, url);
      if (wrong) {
        const issue: ConfigIssue = {
          severity: 'error',
          pointer: ptr,
          rule: 'url-scheme',
          message: wrong,
          value: v,
        };
        out.push(place(issue, positions, false));
      }
    }
  };
  walk(rootSchema(), doc, '');
  if (unlisted > 0) {
    out.push({
      severity: 'warning',
      pointer: '',
      rule: 'unknown-member',
      message: `${unlisted} more unknown members are ignored (only the first ${MAX_UNKNOWN_LISTED} are listed)`,
    });
  }
  return out;
}

/** Unknown members listed one by one, each with its "did you mean" (which costs an edit
 *  distance per known field): past this many a document is junk, not a few typos, and the
 *  rest are only counted, so a body of a million of them is answered in a moment. */
export const MAX_UNKNOWN_LISTED = 200;

const SATELLITE_TYPES = new Set([5, 6]);

/** Input types that cannot work without a port (spec 1 gives them default 0, out of range). */
const PORT_INPUTS = new Set(['udp', 'rtp', 'prompeg', 'tcp', 'srt', 'ps1']);

/** Characters that keep a stream-name usable as a URL path segment as it is. */
const URL_SAFE_NAME = /^[A-Za-z0-9._~-]+$/;

function warn(
  positions: PositionIndex,
  pointer: string,
  rule: string,
  message: string,
  value?: unknown,
  key = false,
): ConfigIssue {
  return place({ severity: 'warning', pointer, rule, message, value }, positions, key);
}

function streamWarnings(
  doc: Record<string, unknown>,
  positions: PositionIndex,
  out: ConfigIssue[],
): void {
  if (!Array.isArray(doc['stream'])) return;
  doc['stream'].forEach((s, i) => {
    if (!isPlainObject(s)) return;
    const name = s['stream-name'];
    if (typeof name === 'string' && name !== '' && !URL_SAFE_NAME.test(name)) {
      out.push(
        warn(
          positions,
          `/stream/${i}/stream-name`,
          'url-name',
          `stream-name ${show(name)} has characters other than ASCII letters, digits and . _ ~ - ` +
            `(${unsafeChars(name)}); its OTT URLs need percent-encoding`,
          name,
        ),
      );
    }
    peerAuthWarnings(doc, s, i, positions, out);
    if (!Array.isArray(s['input'])) return;
    s['input'].forEach((inp, j) => {
      if (
        !isPlainObject(inp) ||
        !PORT_INPUTS.has(inp['type'] as string) ||
        inp['port'] !== undefined
      )
        return;
      out.push(
        warn(
          positions,
          `/stream/${i}/input/${j}`,
          'not-set',
          `port is not set: this ${inp['type']} input cannot receive until it is`,
        ),
      );
    });
  });
}

/** peer-auth on a stream's inputs and outputs: it needs the cluster's domain, and a listening
 *  srt input does not use it (spec 1: dial-out only). */
function peerAuthWarnings(
  doc: Record<string, unknown>,
  s: Record<string, unknown>,
  i: number,
  positions: PositionIndex,
  out: ConfigIssue[],
): void {
  const cluster = doc['cluster'];
  const domain = isPlainObject(cluster) ? cluster['domain'] : undefined;
  for (const list of ['input', 'output'] as const) {
    const records = s[list];
    if (!Array.isArray(records)) continue;
    records.forEach((r, j) => {
      if (!isPlainObject(r) || r['peer-auth'] !== true) return;
      const pointer = `/stream/${i}/${list}/${j}/peer-auth`;
      if (list === 'input' && r['type'] === 'srt' && r['listen-mode'] === true) {
        out.push(
          warn(
            positions,
            pointer,
            'peer-auth-listener',
            'peer-auth applies when dialling (listen-mode false): this listening srt input ignores it',
            true,
          ),
        );
      } else if (typeof domain !== 'string' || domain === '') {
        out.push(
          warn(
            positions,
            pointer,
            'peer-auth-domain',
            'peer-auth needs cluster.domain (the same on both servers): without it this ' +
              `${list} cannot authenticate to its peer`,
            true,
          ),
        );
      }
    });
  }
}

/** Warnings about settings that are valid but leave a resource unable to work. */
export function semanticWarnings(doc: unknown, positions: PositionIndex): ConfigIssue[] {
  const out: ConfigIssue[] = [];
  if (!isPlainObject(doc)) return out;
  streamWarnings(doc, positions, out);
  if (!Array.isArray(doc['dvb-adapter'])) return out;
  doc['dvb-adapter'].forEach((a, i) => {
    if (!isPlainObject(a)) return;
    const mode = a['mode'] ?? 0;
    if (mode !== 0) return;
    const pointer = `/dvb-adapter/${i}`;
    if (a['type'] === undefined) {
      out.push(
        place(
          {
            severity: 'warning',
            pointer,
            rule: 'type-not-set',
            message:
              'type is not set: a stream adapter (mode 0) cannot tune without a delivery system type',
          },
          positions,
          false,
        ),
      );
    }
    const ignored = streamIdIgnored(a, pointer, positions);
    if (ignored) out.push(ignored);
    const pol = a['lnb-polarization'];
    if (SATELLITE_TYPES.has(a['type'] as number) && (pol === undefined || pol === -1)) {
      out.push(
        place(
          {
            severity: 'warning',
            pointer: `${pointer}/lnb-polarization`,
            rule: 'lnb-polarization',
            message:
              'lnb-polarization is not set (mode 0 needs 0 horizontal or 1 vertical); the adapter will report that lnb-polarization is not set',
            value: pol,
          },
          positions,
          pol !== undefined,
        ),
      );
    }
  });
  return out;
}

/** Delivery systems spec 1 lets carry `dvb-stream-id` although they have no input streams or
 *  PLPs to select: the tuning leaves it out, so say so rather than ignore it silently. */
const NO_STREAM_ID: Record<number, string> = { 3: 'DVB-T (type 3)', 5: 'DVB-S (type 5)' };

function streamIdIgnored(
  a: Record<string, unknown>,
  pointer: string,
  positions: PositionIndex,
): ConfigIssue | null {
  const system = NO_STREAM_ID[a['type'] as number];
  const id = a['dvb-stream-id'];
  if (!system || id === undefined || id === -1) return null;
  return warn(
    positions,
    `${pointer}/dvb-stream-id`,
    'dvb-stream-id-ignored',
    `dvb-stream-id ${show(id)} is ignored on ${system}: only DVB-S2 (type 6) input streams and ` +
      'DVB-T2 (type 16) PLPs are selected by it; remove it, or set type to the system the transponder uses',
    id,
  );
}

/** The distinct characters of `name` that are not URL-safe, quoted, at most a few. */
function unsafeChars(name: string): string {
  const MAX_SHOWN = 5;
  const seen = [...new Set([...name].filter((c) => !URL_SAFE_NAME.test(c)))];
  const shown = seen.slice(0, MAX_SHOWN).map((c) => JSON.stringify(c));
  return shown.join(', ') + (seen.length > MAX_SHOWN ? ', …' : '');
}
