// JSON request bodies (application/json and merge-patch+json): Fastify's safe parser (which
// refuses __proto__ / constructor.prototype members), but a malformed body is answered like a
// malformed config file, with what is wrong and its line:column, instead of a bare "not JSON".
import type { FastifyInstance, FastifyRequest } from 'fastify';
import { JsonSyntaxError, parseJsonWithPositions } from '../config/json.ts';
import { ConfigError } from '../config/types.ts';
import { HttpError } from '../errors.ts';

type Done = (err: Error | null, body?: unknown) => void;

export function jsonBodyParser(app: FastifyInstance) {
  const safe = app.getDefaultJsonParser('error', 'error');
  return (req: FastifyRequest, body: string, done: Done): void => {
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
  return new HttpError(
    'BAD_REQUEST',
    'the request body has a "__proto__" or "constructor"."prototype" member, which is refused',
  );
}
