// Read-only SQL on an EPG database (POST /data/epg/sql): run in a child process on the file
// opened read-only, exactly one statement, only statements SQLite reports as read-only and
// returning rows, a row cap and a hard time limit (the child is killed when it passes), so a
// slow query neither blocks the server's event loop nor runs on.
import { spawn } from 'node:child_process';
import { HttpError } from '../errors.ts';

export const SQL_MAX_ROWS = 1000;
export const SQL_MAX_MS = 2000;
/** Start-up of the child (Node + better-sqlite3, up to its ready byte) is not counted against
 *  the query's limit, but is bounded too. */
export const SQL_STARTUP_ALLOWANCE_MS = 5000;
/** After the limit, the child gets this long to return the rows it has (its own check between
 *  rows) before it is killed. */
export const SQL_KILL_GRACE_MS = 250;
/** Largest answer (JSON bytes of the rows): 1,000 rows of long descriptions fit easily. A
 *  larger one is refused with its own message (the child counts as it reads rows). */
export const SQL_MAX_ANSWER_BYTES = 16 * 1024 * 1024;
/** The child is killed past this much output whatever it says (its JSON wrapper included). */
const MAX_CHILD_OUTPUT = 2 * SQL_MAX_ANSWER_BYTES;
const MIB = 1024 * 1024;
const CHILD = new URL('./sql-child.mjs', import.meta.url).pathname;

export interface SqlResult {
  columns: string[];
  rows: unknown[][];
  /** True when the row cap, or the time limit between two rows, stopped the query. */
  truncated: boolean;
}

type ChildAnswer =
  | SqlResult
  | { error: 'open' | 'refused' | 'failed'; message: string }
  | { error: 'too-large'; rows: number };

function tooLarge(limit: number, rows?: number): HttpError {
  const after = rows === undefined ? '' : ` (reached after ${rows} rows)`;
  return new HttpError(
    'BAD_REQUEST',
    `SQL answer too large: more than the ${limit / MIB} MB limit${after}; select fewer rows or shorter columns (LIMIT, substr())`,
  );
}

export async function runReadOnlySql(
  path: string,
  sql: string,
  limits: { maxRows: number; maxMs: number; maxBytes?: number },
): Promise<SqlResult> {
  const maxBytes = limits.maxBytes ?? SQL_MAX_ANSWER_BYTES;
  const child = spawn(process.execPath, [CHILD], { stdio: ['pipe', 'pipe', 'pipe'] });
  let out = '';
  let err = '';
  let killedForTime = false;
  let killedForSize = false;
  let ready = false;
  // Real time, not the Clock: this bounds a process, it is not EPG logic.
  const kill = () => {
    killedForTime = true;
    child.kill('SIGKILL');
  };
  let timer = setTimeout(kill, SQL_STARTUP_ALLOWANCE_MS);
  child.stdout.setEncoding('utf8').on('data', (c: string) => {
    if (!ready && c.startsWith('\n')) {
      ready = true;
      c = c.slice(1);
      clearTimeout(timer);
      timer = setTimeout(kill, limits.maxMs + SQL_KILL_GRACE_MS);
    }
    out += c;
    if (out.length > Math.max(MAX_CHILD_OUTPUT, 2 * maxBytes)) {
      killedForSize = true;
      child.kill('SIGKILL');
    }
  });
  child.stderr.setEncoding('utf8').on('data', (c: string) => {
    err = (err + c).slice(-4096);
  });
  const exited = new Promise<number | null>((resolve) => child.once('close', resolve));
  child.stdin.end(
    JSON.stringify({ path, sql, maxRows: limits.maxRows, maxMs: limits.maxMs, maxBytes }),
  );
  const code = await exited.finally(() => clearTimeout(timer));
  if (killedForSize) throw tooLarge(maxBytes);
  if (killedForTime) {
    throw new HttpError(
      'BAD_REQUEST',
      ready
        ? `SQL stopped: the statement ran past the ${limits.maxMs} ms time limit`
        : 'SQL stopped: the query process did not start in time',
    );
  }
  let answer: ChildAnswer;
  try {
    answer = JSON.parse(out) as ChildAnswer;
  } catch {
    throw new Error(`EPG SQL child failed (exit ${code}): ${err || 'no answer'}`);
  }
  if ('error' in answer) {
    if (answer.error === 'too-large') throw tooLarge(maxBytes, answer.rows);
    const prefix = answer.error === 'refused' ? 'SQL refused' : 'SQL failed';
    throw new HttpError('BAD_REQUEST', `${prefix}: ${answer.message}`);
  }
  return answer;
}
