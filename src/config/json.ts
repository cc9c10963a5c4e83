// A small JSON parser that remembers where every value and member name starts, so every
// later issue (schema, reference, duplicate) can point at line:column in the original text.

/** Deepest nesting accepted; deeper documents are refused instead of overflowing the stack. */
const MAX_DEPTH = 256;

export interface Position {
  line: number;
  column: number;
}

/** Offsets of values and member names by JSON pointer, with lazy line:column lookup. The
 *  maps are filled on first use (a second pass over the text): a valid config never needs
 *  them, and recording every pointer of a large file costs more than the parse itself. */
export class PositionIndex {
  private value = new Map<string, number>();
  private key = new Map<string, number>();
  private lineStarts: number[] | undefined;
  private filled: boolean;

  constructor(
    private readonly text: string,
    filled = false,
  ) {
    this.filled = filled;
  }

  get valueAt(): Map<string, number> {
    this.fill();
    return this.value;
  }

  get keyAt(): Map<string, number> {
    this.fill();
    return this.key;
  }

  private fill(): void {
    if (this.filled) return;
    this.filled = true;
    const full = parseJsonWithPositions(this.text, true).positions;
    this.value = full.value;
    this.key = full.key;
  }

  /** Record offsets while parsing (the recording pass only). */
  setValue(pointer: string, offset: number): void {
    this.value.set(pointer, offset);
  }

  setKey(pointer: string, offset: number): void {
    this.key.set(pointer, offset);
  }

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

/** Parse `text` as JSON. Positions of values and member names are recorded when `record`
 *  is true, otherwise on first use of the returned index. */
export function parseJsonWithPositions(
  text: string,
  record = false,
): { value: unknown; positions: PositionIndex } {
  const positions = new PositionIndex(text, record);
  let i = text.charCodeAt(0) === 0xfeff ? 1 : 0;
  const n = text.length;

  const fail = (msg: string, at = i, rule = 'syntax', pointer = ''): never => {
    const pos = positions.at(Math.min(at, n));
    throw new JsonSyntaxError(msg, at, pos.line, pos.column, rule, pointer);
  };
  const describe = (at: number): string =>
    at >= n ? 'end of file' : `character ${JSON.stringify(text[at])}`;
  // What people write in JSON by habit from other formats, said in plain words.
  const hint = (at: number): string => {
    const c = text[at];
    const next = text[at + 1];
    if (c === '/' && (next === '/' || next === '*')) return ' (JSON has no comments: remove it)';
    if (c === "'") return ' (JSON strings and member names take double quotes)';
    return '';
  };
  const trailingComma = (comma: number, close: string): never =>
    fail(`trailing comma before '${close}' (JSON allows none: remove the comma)`, comma);

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
    if (record) positions.setValue(pointer, i);
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
    return fail(`unexpected ${describe(i)}, expected a value${hint(i)}`);
  };

  const object = (pointer: string, depth: number): Record<string, unknown> => {
    i++;
    const out: Record<string, unknown> = {};
    ws();
    if (text.charCodeAt(i) === 125) {
      i++;
      return out;
    }
    let comma = -1;
    for (;;) {
      ws();
      if (comma >= 0 && text.charCodeAt(i) === 125) trailingComma(comma, '}');
      if (text.charCodeAt(i) !== 34) {
        const bare = /[A-Za-z_$]/.test(text[i] ?? '') ? ' (member names take double quotes)' : '';
        fail(`unexpected ${describe(i)}, expected a member name${hint(i) || bare}`);
      }
      const keyStart = i;
      const key = str();
      const child = record ? `${pointer}/${escapePointerToken(key)}` : '';
      if (Object.hasOwn(out, key)) {
        // Pointers are only built while recording: let the recording pass report it.
        if (!record) parseJsonWithPositions(text, true);
        fail(`duplicate member ${JSON.stringify(key)}`, keyStart, 'duplicate-member', child);
      }
      if (record) positions.setKey(child, keyStart);
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
        comma = i++;
        continue;
      }
      if (c === 125) {
        i++;
        return out;
      }
      fail(`unexpected ${describe(i)}, expected ',' or '}'${hint(i)}`);
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
    let comma = -1;
    for (;;) {
      if (comma >= 0) {
        ws();
        if (text.charCodeAt(i) === 93) trailingComma(comma, ']');
      }
      out.push(value(record ? `${pointer}/${out.length}` : '', depth + 1));
      ws();
      const c = text.charCodeAt(i);
      if (c === 44) {
        comma = i++;
        continue;
      }
      if (c === 93) {
        i++;
        return out;
      }
      fail(`unexpected ${describe(i)}, expected ',' or ']'${hint(i)}`);
    }
  };

  const result = value('', 0);
  ws();
  if (i < n) fail(`unexpected ${describe(i)} after the end of the document${hint(i)}`);
  return { value: result, positions };
}
