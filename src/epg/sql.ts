// Read-only SQL on an EPG database (POST /data/epg/sql): the file opened read-only, exactly one
// statement, only statements SQLite reports as read-only, a row cap and a time budget.
import Database from 'better-sqlite3';
import { HttpError } from '../errors.ts';

export const SQL_MAX_ROWS = 1000;
export const SQL_MAX_MS = 2000;

export interface SqlResult {
  columns: string[];
  rows: unknown[][];
  /** True when the row cap or the time budget stopped the query. */
  truncated: boolean;
}

export function runReadOnlySql(
  path: string,
  sql: string,
  limits: { maxRows: number; maxMs: number },
): SqlResult {
  const db = new Database(path, { readonly: true, fileMustExist: true });
  try {
    let stmt: Database.Statement;
    try {
      stmt = db.prepare(sql);
    } catch (err) {
      throw new HttpError('BAD_REQUEST', `SQL refused: ${(err as Error).message}`);
    }
    if (!stmt.readonly)
      throw new HttpError('BAD_REQUEST', 'SQL refused: only read statements are allowed');
    if (!stmt.reader)
      throw new HttpError('BAD_REQUEST', 'SQL refused: the statement returns no rows');
    const columns = stmt.columns().map((c) => c.name);
    stmt.raw(true);
    const rows: unknown[][] = [];
    const started = performance.now();
    let truncated = false;
    // The time budget is checked between rows: one slow row cannot be interrupted.
    for (const row of stmt.iterate() as IterableIterator<unknown[]>) {
      if (rows.length >= limits.maxRows || performance.now() - started > limits.maxMs) {
        truncated = true;
        break;
      }
      rows.push(row);
    }
    return { columns, rows, truncated };
  } catch (err) {
    if (err instanceof HttpError) throw err;
    throw new HttpError('BAD_REQUEST', `SQL failed: ${(err as Error).message}`);
  } finally {
    db.close();
  }
}
