// The position-recording JSON parser: same values as JSON.parse, positions of values and
// member names, and precise syntax errors.
import t from 'tap';
import { JsonSyntaxError, parseJsonWithPositions } from '../../src/config/json.ts';

t.test('parses like JSON.parse', async (t) => {
  const texts = [
    '{"a": [1, -2.5e3, true, false, null, "x\\u00e9\\n\\"q\\""], "b": {}, "c": []}',
    '\ufeff{"bom": 1}',
    '  "just a string"  ',
    '0',
  ];
  for (const text of texts)
    t.same(parseJsonWithPositions(text).value, JSON.parse(text.replace(/^\ufeff/, '')));
});

t.test('records positions by JSON pointer', async (t) => {
  const text = '{\n  "stream": [\n    {"id": 1, "a/b": "x"}\n  ]\n}';
  const { positions } = parseJsonWithPositions(text);
  t.same(positions.locate('/stream/0/id'), { line: 3, column: 12 });
  t.same(positions.locate('/stream/0/id', true), { line: 3, column: 6 });
  t.same(positions.locate('/stream/0/a~1b'), { line: 3, column: 22 });
  t.same(positions.locateNearest('/stream/0/missing'), { line: 3, column: 5 });
  t.same(positions.locate(''), { line: 1, column: 1 });
});

t.test('a member named __proto__ stays a plain member', async (t) => {
  const v = parseJsonWithPositions('{"__proto__": {"polluted": 1}}').value as Record<
    string,
    unknown
  >;
  t.ok(Object.hasOwn(v, '__proto__'));
  t.equal(({} as Record<string, unknown>)['polluted'], undefined);
  t.equal(Object.getPrototypeOf(v), Object.prototype);
});

t.test('syntax errors carry line and column', async (t) => {
  const cases: [string, string, number, number][] = [
    ['{"a": 1,\n}', `trailing comma before '}' (JSON allows none: remove the comma)`, 1, 8],
    ['[1, 2, ]', `trailing comma before ']' (JSON allows none: remove the comma)`, 1, 6],
    [
      '{\n  // note\n  "a": 1\n}',
      'unexpected character "/", expected a member name (JSON has no comments: remove it)',
      2,
      3,
    ],
    [
      '{"a": 1 /* x */}',
      `unexpected character "/", expected ',' or '}' (JSON has no comments: remove it)`,
      1,
      9,
    ],
    [
      "{'a': 1}",
      `unexpected character "'", expected a member name (JSON strings and member names take double quotes)`,
      1,
      2,
    ],
    [
      '{a: 1}',
      'unexpected character "a", expected a member name (member names take double quotes)',
      1,
      2,
    ],
    ['{"a" 1}', `unexpected character "1", expected ':'`, 1, 6],
    ['[1, 2', `unexpected end of file, expected ',' or ']'`, 1, 6],
    ['{"a": tru}', 'unexpected character "t", expected a value', 1, 7],
    ['{} {}', 'unexpected character "{" after the end of the document', 1, 4],
    ['{"a": "\\x"}', 'invalid escape sequence in string', 1, 7],
    ['', 'unexpected end of file, expected a value', 1, 1],
    ['{"a": 01}', `unexpected character "1", expected ',' or '}'`, 1, 8],
    ['{"a": 1, "a": 2}', 'duplicate member "a"', 1, 10],
  ];
  for (const [text, message, line, column] of cases) {
    const err = t.throws(() => parseJsonWithPositions(text)) as JsonSyntaxError;
    t.ok(err instanceof JsonSyntaxError, text);
    t.equal(err.message, `${message} at line ${line}, column ${column}`, text);
  }
  const deep = '['.repeat(300) + ']'.repeat(300);
  t.throws(() => parseJsonWithPositions(deep), /nesting deeper than 256 levels/);
});
