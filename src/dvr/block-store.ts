// Rendered playlist hour blocks kept in the index database, so the first request for a day
// after a restart (or one nobody asked for yet) joins stored text instead of rendering
// 43,200 rows. Triggers drop a stored block in the same transaction as any insert or delete
// of a chunk in its hour, so the stored text can never disagree with the index.
import type { Database, Statement } from 'better-sqlite3';
import type { LeanChunk } from './index-db.ts';

/** One rendered run of rows (see playlist-blocks.ts). */
export interface StoredPart {
  first: LeanChunk;
  last: LeanChunk;
  head: string;
  tail: string;
  maxDuration: number;
  count: number;
}

/** Schema for a block length of `blockMs` (the hour of playlist-blocks.ts). */
function schema(blockMs: number): string {
  const of = (row: 'NEW' | 'OLD') =>
    `DELETE FROM block WHERE stream = ${row}.stream AND track = ${row}.track
       AND block_ms = CAST(${row}.start_ms / ${blockMs} AS INTEGER) * ${blockMs};`;
  return `
CREATE TABLE IF NOT EXISTS block (
  stream TEXT NOT NULL,
  track TEXT NOT NULL,
  block_ms INTEGER NOT NULL,
  part TEXT,
  head TEXT NOT NULL DEFAULT '',
  tail TEXT NOT NULL DEFAULT '',
  PRIMARY KEY (stream, track, block_ms)
) WITHOUT ROWID;
CREATE TRIGGER IF NOT EXISTS block_on_insert AFTER INSERT ON chunk BEGIN ${of('NEW')} END;
CREATE TRIGGER IF NOT EXISTS block_on_delete AFTER DELETE ON chunk BEGIN ${of('OLD')} END;
`;
}

/** Stored blocks of one index database. `null` = a stored empty block (no chunk that hour). */
export class BlockStore {
  private getStmt: Statement;
  private putStmt: Statement;

  constructor(db: Database, blockMs: number) {
    db.exec(schema(blockMs));
    this.getStmt = db.prepare(
      'SELECT part, head, tail FROM block WHERE stream = ? AND track = ? AND block_ms = ?',
    );
    this.putStmt = db.prepare(
      'INSERT OR REPLACE INTO block (stream, track, block_ms, part, head, tail) VALUES (?, ?, ?, ?, ?, ?)',
    );
  }

  get(stream: string, track: string, block: number): StoredPart | null | undefined {
    const r = this.getStmt.get(stream, track, block) as
      | { part: string | null; head: string; tail: string }
      | undefined;
    if (!r) return undefined;
    if (r.part === null) return null;
    const meta = JSON.parse(r.part) as Omit<StoredPart, 'head' | 'tail'>;
    return { ...meta, head: r.head, tail: r.tail };
  }

  put(stream: string, track: string, block: number, p: StoredPart | undefined): void {
    const meta = p
      ? JSON.stringify({ first: p.first, last: p.last, maxDuration: p.maxDuration, count: p.count })
      : null;
    this.putStmt.run(stream, track, block, meta, p?.head ?? '', p?.tail ?? '');
  }
}
