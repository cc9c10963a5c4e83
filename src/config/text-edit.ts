// Format-preserving rewrite of a JSON text: turn `text` into a text whose value is `next`
// while keeping every byte of what did not change (layout, indentation, spacing, number and
// string spellings), so an edit of one member is a one-line diff however the file is laid out.
// New values take the style of their neighbours: one line beside one-line siblings, indented
// like them otherwise.
import { deepEqual, setOwn } from './defaults.ts';

/** Arrays longer than this (after the common head and tail) are matched by identity only,
 *  not by a longest common subsequence (quadratic). */
const MAX_LCS_CELLS = 1 << 16;
/** Indentation step used when the text gives none to copy. */
const DEFAULT_INDENT = '  ';
/** Members that name a record, in the order they are tried when pairing array items. */
const IDENTITY_MEMBERS = ['id', 'login', 'name', 'stream-name'];

interface Scalar {
  kind: 'scalar';
  start: number;
  end: number;
  value: unknown;
}
interface Member {
  key: string;
  /** Offsets of the member name's opening quote and just past its closing one. */
  start: number;
  keyEnd: number;
  value: Node;
}
interface Obj {
  kind: 'object';
  start: number;
  end: number;
  members: Member[];
  value: Record<string, unknown>;
}
interface Arr {
  kind: 'array';
  start: number;
  end: number;
  items: Node[];
  value: unknown[];
}
type Node = Scalar | Obj | Arr;

class NotJson extends Error {}

const LITERAL = /true|false|null|-?(?:0|[1-9]\d*)(?:\.\d+)?(?:[eE][+-]?\d+)?/y;

/** A syntax tree with offsets. The text is one the config loader accepted; anything else is
 *  refused (NotJson) and the caller writes the value afresh. */
function scan(text: string): Node {
  let i = text.charCodeAt(0) === 0xfeff ? 1 : 0;
  const ws = () => {
    for (;;) {
      const c = text.charCodeAt(i);
      if (c === 32 || c === 10 || c === 13 || c === 9) i++;
      else break;
    }
  };
  const expect = (c: string) => {
    if (text[i] !== c) throw new NotJson(`expected ${c} at ${i}`);
    i++;
  };
  const string = (): string => {
    const start = i;
    let escaped = false;
    i++;
    for (;;) {
      const c = text.charCodeAt(i);
      if (c === 34 || Number.isNaN(c)) break;
      if (c === 92) {
        escaped = true;
        i++;
      }
      i++;
    }
    expect('"');
    return escaped ? (JSON.parse(text.slice(start, i)) as string) : text.slice(start + 1, i - 1);
  };
  const value = (): Node => {
    ws();
    const start = i;
    const c = text[i];
    if (c === '{') {
      i++;
      const members: Member[] = [];
      const obj: Record<string, unknown> = {};
      ws();
      if (text[i] === '}') i++;
      else {
        for (;;) {
          ws();
          const keyStart = i;
          if (text[i] !== '"') throw new NotJson(`expected a member name at ${i}`);
          const key = string();
          const keyEnd = i;
          ws();
          expect(':');
          const v = value();
          members.push({ key, start: keyStart, keyEnd, value: v });
          setOwn(obj, key, v.value);
          ws();
          if (text[i] === ',') i++;
          else {
            expect('}');
            break;
          }
        }
      }
      return { kind: 'object', start, end: i, members, value: obj };
    }
    if (c === '[') {
      i++;
      const items: Node[] = [];
      ws();
      if (text[i] === ']') i++;
      else {
        for (;;) {
          items.push(value());
          ws();
          if (text[i] === ',') i++;
          else {
            expect(']');
            break;
          }
        }
      }
      return { kind: 'array', start, end: i, items, value: items.map((n) => n.value) };
    }
    if (c === '"') {
      const s = string();
      return { kind: 'scalar', start, end: i, value: s };
    }
    LITERAL.lastIndex = i;
    const m = LITERAL.exec(text);
    if (!m) throw new NotJson(`unexpected character at ${i}`);
    i += m[0].length;
    return { kind: 'scalar', start, end: i, value: JSON.parse(m[0]) };
  };
  const root = value();
  ws();
  if (i !== text.length) throw new NotJson('text after the document');
  return root;
}

const isObject = (v: unknown): v is Record<string, unknown> =>
  typeof v === 'object' && v !== null && !Array.isArray(v);

/** The whitespace that starts the line `offset` is on. */
function lineIndent(text: string, offset: number): string {
  const lineStart = text.lastIndexOf('\n', offset - 1) + 1;
  let end = lineStart;
  while (text[end] === ' ' || text[end] === '\t') end++;
  return text.slice(lineStart, end);
}

/** What a new value looks like next to `ref` (a sibling, or the value it replaces). */
interface Style {
  /** Containers over several lines, indented (else on one line). */
  multiLine: boolean;
  /** Indentation of the line the value starts on, and one step of it. */
  indent: string;
  unit: string;
  /** One-line containers: `{"a": 1, "b": 2}` (spaced) or `{"a":1,"b":2}`; `{ … }` padded. */
  spaced: boolean;
  padded: boolean;
}

function styleOf(text: string, ref: Node | undefined, at: number, fallbackUnit: string): Style {
  const indent = lineIndent(text, at);
  const refText = ref ? text.slice(ref.start, ref.end) : '';
  const multiLine = refText.includes('\n');
  let unit = fallbackUnit;
  if (ref && ref.kind !== 'scalar' && multiLine) {
    const first = ref.kind === 'object' ? ref.members[0]?.start : ref.items[0]?.start;
    if (first !== undefined) {
      const inner = lineIndent(text, first);
      const refIndent = lineIndent(text, ref.start);
      if (inner.startsWith(refIndent) && inner.length > refIndent.length) {
        unit = inner.slice(refIndent.length);
      }
    }
  }
  return {
    multiLine,
    indent,
    unit,
    spaced: ref === undefined || ref.kind === 'scalar' || /[:,] /.test(refText),
    padded: /^[[{] /.test(refText),
  };
}

/** A new value in the given style. */
function render(v: unknown, s: Style): string {
  if (v === null || typeof v !== 'object') return JSON.stringify(v);
  if (s.multiLine && (Array.isArray(v) ? v.length > 0 : Object.keys(v).length > 0)) {
    return JSON.stringify(v, null, s.unit).replace(/\n/g, `\n${s.indent}`);
  }
  return oneLine(v, s);
}

function oneLine(v: unknown, s: Style): string {
  if (v === null || typeof v !== 'object') return JSON.stringify(v);
  const [colon, comma] = s.spaced ? [': ', ', '] : [':', ','];
  const parts = Array.isArray(v)
    ? v.map((x) => oneLine(x, s))
    : Object.entries(v).map(([k, x]) => `${JSON.stringify(k)}${colon}${oneLine(x, s)}`);
  if (parts.length === 0) return Array.isArray(v) ? '[]' : '{}';
  const pad = s.padded ? ' ' : '';
  const [open, close] = Array.isArray(v) ? ['[', ']'] : ['{', '}'];
  return `${open}${pad}${parts.join(comma)}${pad}${close}`;
}

/** One element of a rewritten container: an old one (by index) with its new text, or new. */
interface Out {
  old?: number;
  text: string;
}

/** A container's text from its elements: an old element keeps the separator before it (and
 *  so its line and indentation); a new one, or an old first one, takes the last separator. */
function join(text: string, node: Obj | Arr, starts: number[], ends: number[], out: Out[]): string {
  const open = text[node.start]!;
  const close = text[node.end - 1]!;
  if (out.length === 0) return `${open}${close}`;
  const n = starts.length;
  if (n === 0) {
    // Was empty: one line, or one element per line when it spanned lines.
    const inner = text.slice(node.start + 1, node.end - 1);
    if (!inner.includes('\n')) return `${open}${out.map((o) => o.text).join(', ')}${close}`;
    const indent = lineIndent(text, node.start);
    const lead = `\n${indent}${DEFAULT_INDENT}`;
    return `${open}${lead}${out.map((o) => o.text).join(`,${lead}`)}\n${indent}${close}`;
  }
  const lead = text.slice(node.start + 1, starts[0]);
  const trail = text.slice(ends[n - 1], node.end - 1);
  const sep = (k: number) => text.slice(ends[k - 1], starts[k]);
  const usual = n >= 2 ? sep(n - 1) : lead.includes('\n') ? `,${lead}` : ', ';
  let s = open + lead;
  out.forEach((o, p) => {
    // An old element keeps the separator (and so the indentation) it had.
    if (p > 0) s += o.old !== undefined && o.old > 0 ? sep(o.old) : usual;
    s += o.text;
  });
  return s + trail + close;
}

/** One indentation step inside `node`: its first element's indentation past its own. */
function unitOf(text: string, node: Obj | Arr, firstStart: number | undefined): string {
  if (firstStart === undefined) return DEFAULT_INDENT;
  const outer = lineIndent(text, node.start);
  const inner = lineIndent(text, firstStart);
  return inner.startsWith(outer) && inner.length > outer.length
    ? inner.slice(outer.length)
    : DEFAULT_INDENT;
}

function rewrite(text: string, node: Node, next: unknown): string {
  if (deepEqual(node.value, next)) return text.slice(node.start, node.end);
  if (node.kind === 'object' && isObject(next)) return rewriteObject(text, node, next);
  if (node.kind === 'array' && Array.isArray(next)) return rewriteArray(text, node, next);
  // A new value in place of the old one, styled like it.
  return render(next, styleOf(text, node, node.start, DEFAULT_INDENT));
}

function rewriteObject(text: string, node: Obj, next: Record<string, unknown>): string {
  const members = node.members;
  const oldIndex = new Map(members.map((m, k) => [m.key, k]));
  const keys = Object.keys(next);
  // Each new member goes just before the next member (in the new order) that the text has.
  const before = new Map<number, string[]>();
  const atEnd: string[] = [];
  keys.forEach((key, p) => {
    if (oldIndex.has(key)) return;
    const follower = keys.slice(p + 1).find((k) => oldIndex.has(k));
    if (follower === undefined) atEnd.push(key);
    else {
      const k = oldIndex.get(follower)!;
      before.set(k, [...(before.get(k) ?? []), key]);
    }
  });
  const unit = unitOf(text, node, members[0]?.start);
  const colonOf = (m: Member | undefined) => (m ? text.slice(m.keyEnd, m.value.start) : ': ');
  const fresh = (key: string, near: Member | undefined, at: number): Out => {
    const style = styleOf(text, near?.value, at, unit);
    return { text: `${JSON.stringify(key)}${colonOf(near)}${render(next[key], style)}` };
  };
  const out: Out[] = [];
  members.forEach((m, k) => {
    for (const key of before.get(k) ?? []) out.push(fresh(key, m, m.start));
    if (!Object.hasOwn(next, m.key)) return;
    out.push({
      old: k,
      text: text.slice(m.start, m.value.start) + rewrite(text, m.value, next[m.key]),
    });
  });
  const last = members[members.length - 1];
  for (const key of atEnd) out.push(fresh(key, last, last?.start ?? node.start));
  return join(
    text,
    node,
    members.map((m) => m.start),
    members.map((m) => m.value.end),
    out,
  );
}

/** Identity of a record for pairing old and new items (`id:3`), or undefined. */
function identity(v: unknown): string | undefined {
  if (!isObject(v)) return undefined;
  for (const k of IDENTITY_MEMBERS) {
    if (v[k] !== undefined) return `${k}:${JSON.stringify(v[k])}`;
  }
  return undefined;
}

/** Pairs (old index, new index) of items kept, in order: equal items (the common head and
 *  tail, then a longest common subsequence), then items of the same identity between them. */
function pairItems(old: unknown[], next: unknown[]): Array<[number, number]> {
  let head = 0;
  while (head < old.length && head < next.length && deepEqual(old[head], next[head])) head++;
  let tail = 0;
  while (
    tail < old.length - head &&
    tail < next.length - head &&
    deepEqual(old[old.length - 1 - tail], next[next.length - 1 - tail])
  ) {
    tail++;
  }
  const a = old.slice(head, old.length - tail);
  const b = next.slice(head, next.length - tail);
  const lcs: Array<[number, number]> = [];
  if (a.length * b.length <= MAX_LCS_CELLS) {
    // Longest common subsequence of equal items.
    const L = Array.from({ length: a.length + 1 }, () => new Array<number>(b.length + 1).fill(0));
    for (let x = a.length - 1; x >= 0; x--) {
      for (let y = b.length - 1; y >= 0; y--) {
        L[x]![y] = deepEqual(a[x], b[y])
          ? L[x + 1]![y + 1]! + 1
          : Math.max(L[x + 1]![y]!, L[x]![y + 1]!);
      }
    }
    for (let x = 0, y = 0; x < a.length && y < b.length; ) {
      if (deepEqual(a[x], b[y])) lcs.push([x++, y++]);
      else if (L[x + 1]![y]! >= L[x]![y + 1]!) x++;
      else y++;
    }
  }
  // Between equal items, an old and a new item of the same identity are one record changed.
  const bounds: Array<[number, number]> = [[-1, -1], ...lcs, [a.length, b.length]];
  const pairs: Array<[number, number]> = [];
  for (let g = 0; g + 1 < bounds.length; g++) {
    const [x0, y0] = bounds[g]!;
    const [x1, y1] = bounds[g + 1]!;
    let x = x0 + 1;
    for (let y = y0 + 1; y < y1; y++) {
      const id = identity(b[y]);
      if (id === undefined) continue;
      for (let k = x; k < x1; k++) {
        if (identity(a[k]) === id) {
          pairs.push([k, y]);
          x = k + 1;
          break;
        }
      }
    }
    if (g + 1 < bounds.length - 1) pairs.push(bounds[g + 1]!);
  }
  const all: Array<[number, number]> = [];
  for (let k = 0; k < head; k++) all.push([k, k]);
  for (const [x, y] of pairs) all.push([x + head, y + head]);
  for (let k = tail; k > 0; k--) all.push([old.length - k, next.length - k]);
  return all;
}

function rewriteArray(text: string, node: Arr, next: unknown[]): string {
  const items = node.items;
  const pairs = pairItems(node.value, next);
  const oldOf = new Map(pairs.map(([x, y]) => [y, x]));
  const unit = unitOf(text, node, items[0]?.start);
  const out: Out[] = [];
  let lastOld = -1;
  next.forEach((v, y) => {
    const x = oldOf.get(y);
    if (x !== undefined) {
      out.push({ old: x, text: rewrite(text, items[x]!, v) });
      lastOld = x;
      return;
    }
    // A new item looks like the old item it follows (or the first).
    const near = items[lastOld] ?? items[0];
    out.push({ text: render(v, styleOf(text, near, near?.start ?? node.start, unit)) });
  });
  return join(
    text,
    node,
    items.map((n) => n.start),
    items.map((n) => n.end),
    out,
  );
}

/**
 * `text` rewritten so that its value is `next`, changing only what differs; undefined when
 * `text` is not a JSON document this editor reads (then write `next` afresh).
 */
export function editJsonText(text: string, next: unknown): string | undefined {
  let root: Node;
  try {
    root = scan(text);
  } catch (err) {
    if (err instanceof NotJson || err instanceof SyntaxError) return undefined;
    throw err;
  }
  const bom = text.charCodeAt(0) === 0xfeff ? '\ufeff' : '';
  const edited =
    bom + text.slice(bom.length, root.start) + rewrite(text, root, next) + text.slice(root.end);
  // The result must mean exactly `next`; an editor mistake must never reach the file.
  try {
    if (deepEqual(JSON.parse(edited.slice(bom.length)), next)) return edited;
  } catch {
    // fall through
  }
  return undefined;
}
