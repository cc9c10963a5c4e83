// JSON request bodies (application/json and merge-patch+json): a shape check before parsing
// (nesting depth, members per object), then Fastify's safe parser (which refuses __proto__ /
// constructor.prototype members). A malformed body is answered like a malformed config file,
// with what is wrong and its line:column, instead of a bare "not JSON".
import type { FastifyInstance, FastifyRequest } from 'fastify';
import { JsonSyntaxError, parseJsonWithPositions } from '../config/json.ts';
import { ConfigError } from '../config/types.ts';
import { HttpError } from '../errors.ts';

type Done = (err: Error | null, body?: unknown) => void;

/** Deepest nesting of objects and arrays a body may have. The deepest config is a few levels
 *  (`/stream/0/input/1/…`); the code that merges, validates and formats a document recurses,
 *  so a body nested thousands deep is refused here, before anything walks it. */
export const MAX_BODY_DEPTH = 64;
/** Most members one object of a body may have. The widest record of the schemas has about 50
 *  fields; each unknown member costs a warning with a "did you mean", so a body of a million
 *  of them is refused at once instead of occupying the server. */
export const MAX_OBJECT_MEMBERS = 1000;

const OPEN_OBJECT = 0x7b; // {
const CLOSE_OBJECT = 0x7d; // }
const OPEN_ARRAY = 0x5b; // [
const CLOSE_ARRAY = 0x5d; // ]
const QUOTE = 0x22; // "
const BACKSLASH = 0x5c;
const COLON = 0x3a;
const NEWLINE = 0x0a;
/** Marks an array on the stack of open containers (objects hold their member count). */
const ARRAY = -1;

/**
 * Refuse a body nested deeper than MAX_BODY_DEPTH or with an object of more than
 * MAX_OBJECT_MEMBERS members: one pass over the text, outside strings, no parsing. Malformed
 * text is left to the parser, which says what is wrong.
 */
export function checkBodyShape(text: string): HttpError | undefined {
  const open: number[] = [];
  let inString = false;
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    if (inString) {
      if (c === BACKSLASH) i++;
      else if (c === QUOTE) inString = false;
      continue;
    }
    if (c === QUOTE) inString = true;
    else if (c === OPEN_OBJECT || c === OPEN_ARRAY) {
      open.push(c === OPEN_OBJECT ? 0 : ARRAY);
      if (open.length > MAX_BODY_DEPTH) {
        return new HttpError(
          'BAD_REQUEST',
          `the request body nests objects and arrays more than ${MAX_BODY_DEPTH} deep (${at(text, i)}); a config document needs a few levels`,
        );
      }
    } else if (c === CLOSE_OBJECT || c === CLOSE_ARRAY) open.pop();
    else if (c === COLON && open.length > 0 && open[open.length - 1]! >= 0) {
      const members = ++open[open.length - 1]!;
      if (members > MAX_OBJECT_MEMBERS) {
        return new HttpError(
          'BAD_REQUEST',
          `an object of the request body has more than ${MAX_OBJECT_MEMBERS} members (${at(text, i)}); no config object has nearly that many`,
        );
      }
    }
  }
  return undefined;
}

/** `line L, column C` of offset `i` (computed only for a refusal). */
function at(text: string, i: number): string {
  let line = 1;
  let start = 0;
  for (let j = 0; j < i; j++) {
    if (text.charCodeAt(j) === NEWLINE) {
      line++;
      start = j + 1;
    }
  }
  return `line ${line}, column ${i - start + 1}`;
}

export function jsonBodyParser(app: FastifyInstance) {
  const safe = app.getDefaultJsonParser('error', 'error');
  return (req: FastifyRequest, body: string, done: Done): void => {
    const refused = checkBodyShape(body);
    if (refused) {
      done(refused);
      return;
    }
    safe(req, body, (err: Error | null, value?: unknown) => {
      if (!err || (err as { code?: string }).code !== 'FST_ERR_CTP_INVALID_JSON_BODY') {
        done(err, value);
        return;
      }
      done(explain(body));
    });
  };
}

/** Why a body the safe parser refused is refused. */
function explain(text: string): Error {
  try {
    parseJsonWithPositions(text);
  } catch (e) {
    if (!(e instanceof JsonSyntaxError)) throw e;
    const message = e.message.replace(/ at line \d+, column \d+$/, '');
    const issue = {
      severity: 'error' as const,
      pointer: e.pointer,
      rule: e.rule,
      message,
      line: e.line,
      column: e.column,
    };
    return new ConfigError(
      `the request body is not valid JSON: ${message} (line ${e.line}, column ${e.column})`,
      [issue],
    );
  }
  // Well-formed, so the safe parser refused a member that could reach Object.prototype.
  const member = /"__proto__"\s*:/.test(text) ? '"__proto__"' : '"constructor" with a "prototype"';
  return new HttpError(
    'BAD_REQUEST',
    `the request body has a ${member} member, which is refused (it could reach Object.prototype)`,
  );
}
