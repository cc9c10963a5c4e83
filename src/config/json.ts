// A small JSON parser that remembers where every value and member name starts, so every
// later issue (schema, reference, duplicate) can point at line:column in the original text.

/** Deepest nesting accepted; deeper documents are refused instead of overflowing the stack. */
const MAX_DEPTH = 256;

export interface Position {
  line: number;
  column: number;
}

/** Offsets of values and member names by JSON pointer, with lazy line:column lookup. */
export class PositionIndex {
  readonly valueAt = new Map<string, number>();
  readonly keyAt = new Map<string, number>();
  private lineStarts: number[] | undefined;

  constructor(private readonly text: string) {}

  /** Position of the value at `pointer` (or of its member name when `key` is true). */
  locate(pointer: string, key = false): Position | undefined {
    const off = key
      ? (this.keyAt.get(pointer) ?? this.valueAt.get(pointer))
      : this.valueAt.get(pointer);
    return off === undefined ? undefined : this.at(off);
  }

  /** Nearest located ancestor (or the pointer itself) for pointers of absent members. */
  locateNearest(pointer: string, key = false): Position | undefined {
    let p = pointer;
    for (;;) {
      const pos = this.locate(p, key);
      if (pos || p === '') return pos;
      p = p.slice(0, p.lastIndexOf('/'));
      key = false;
    }
  }

  at(offset: number): Position {
    if (!this.lineStarts) {
      const starts = [0];
      for (let i = 0; i < this.text.length; i++) {
        if (this.text.charCodeAt(i) === 10) starts.push(i + 1);
      }
      this.lineStarts = starts;
    }
    const starts = this.lineStarts;
    let lo = 0;
    let hi = starts.length - 1;
    while (lo < hi) {
      const mid = (lo + hi + 1) >> 1;
      if (starts[mid]! <= offset) lo = mid;
      else hi = mid - 1;
    }
    return { line: lo + 1, column: offset - starts[lo]! + 1 };
  }
}

export class JsonSyntaxError extends Error {
  constructor(
    message: string,
    readonly offset: number,
    readonly line: number,
    readonly column: number,
    /** `syntax` or `duplicate-member`. */
    readonly rule: string = 'syntax',
    readonly pointer: string = '',
  ) {
    super(`${message} at line ${line}, column ${column}`);
    this.name = 'JsonSyntaxError';
  }
}

export function escapePointerToken(token: string): string {
  return token.replace(/~/g, '~0').replace(/\//g, '~1');
}

export function unescapePointerToken(token: string): string {
  return token.replace(/~1/g, '/').replace(/~0/g, '~');
}

const NUMBER_RE = /-?(?:0|[1-9]\d*)(?:\.\d+)?(?:[eE][+-]?\d+)?/y;

/** Parse `text` as JSON, recording the offset of every value and member name. */
export function parseJsonWithPositions(text: string): { value: unknown; positions: PositionIndex } {
  const positions = new PositionIndex(text);
  let i = text.charCodeAt(0) === 0xfeff ? 1 : 0;
  const n = text.length;

  const fail = (msg: string, at = i, rule = 'syntax', pointer = ''): never => {
    const pos = positions.at(Math.min(at, n));
    throw new JsonSyntaxError(msg, at, pos.line, pos.column, rule, pointer);
  };
  const describe = (at: number): string =>
    at >= n ? 'end of file' : `character ${JSON.stringify(text[at])}`;

  const ws = (): void => {
    while (i < n) {
      const c = text.charCodeAt(i);
      if (c === 32 || c === 10 || c === 13 || c === 9) i++;
      else break;
    }
  };

  const str = (): string => {
    const start = i;
    i++; // opening quote
    let escaped = false;
    while (i < n) {
      const c = text.charCodeAt(i);
      if (c === 34) {
        i++;
        if (!escaped) return text.slice(start + 1, i - 1);
        try {
          return JSON.parse(text.slice(start, i)) as string;
        } catch {
          return fail('invalid escape sequence in string', start);
        }
      }
      if (c === 92) {
        escaped = true;
        i += 2;
        continue;
      }
      if (c < 32) fail('control character inside a string (escape it)');
      i++;
    }
    return fail('unterminated string', start);
  };

  const value = (pointer: string, depth: number): unknown => {
    ws();
    if (depth > MAX_DEPTH) fail(`nesting deeper than ${MAX_DEPTH} levels`);
    positions.valueAt.set(pointer, i);
    const c = text.charCodeAt(i);
    if (c === 123) return object(pointer, depth);
    if (c === 91) return array(pointer, depth);
    if (c === 34) return str();
    if (c === 116 && text.startsWith('true', i)) {
      i += 4;
      return true;
    }
    if (c === 102 && text.startsWith('false', i)) {
      i += 5;
      return false;
    }
    if (c === 110 && text.startsWith('null', i)) {
      i += 4;
      return null;
    }
    NUMBER_RE.lastIndex = i;
    const m = NUMBER_RE.exec(text);
    if (m) {
      i += m[0].length;
      return Number(m[0]);
    }
    return fail(`unexpected ${describe(i)}, expected a value`);
  };

  const object = (pointer: string, depth: number): Record<string, unknown> => {
    i++;
    const out: Record<string, unknown> = {};
    ws();
    if (text.charCodeAt(i) === 125) {
      i++;
      return out;
    }
    for (;;) {
      ws();
      if (text.charCodeAt(i) !== 34) fail(`unexpected ${describe(i)}, expected a member name`);
      const keyStart = i;
      const key = str();
      const child = `${pointer}/${escapePointerToken(key)}`;
      if (Object.hasOwn(out, key)) {
        fail(`duplicate member ${JSON.stringify(key)}`, keyStart, 'duplicate-member', child);
      }
      positions.keyAt.set(child, keyStart);
      ws();
      if (text.charCodeAt(i) !== 58) fail(`unexpected ${describe(i)}, expected ':'`);
      i++;
      const v = value(child, depth + 1);
      // defineProperty keeps a member named __proto__ an own member, as JSON.parse does.
      if (key === '__proto__') {
        Object.defineProperty(out, key, {
          value: v,
          enumerable: true,
          writable: true,
          configurable: true,
        });
      } else out[key] = v;
      ws();
      const c = text.charCodeAt(i);
      if (c === 44) {
        i++;
        continue;
      }
      if (c === 125) {
        i++;
        return out;
      }
      fail(`unexpected ${describe(i)}, expected ',' or '}'`);
    }
  };

  const array = (pointer: string, depth: number): unknown[] => {
    i++;
    const out: unknown[] = [];
    ws();
    if (text.charCodeAt(i) === 93) {
      i++;
      return out;
    }
    for (;;) {
      out.push(value(`${pointer}/${out.length}`, depth + 1));
      ws();
      const c = text.charCodeAt(i);
      if (c === 44) {
        i++;
        continue;
      }
      if (c === 93) {
        i++;
        return out;
      }
      fail(`unexpected ${describe(i)}, expected ',' or ']'`);
    }
  };

  const result = value('', 0);
  ws();
  if (i < n) fail(`unexpected ${describe(i)} after the end of the document`);
  return { value: result, positions };
}
