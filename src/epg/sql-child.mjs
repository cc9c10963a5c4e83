// Child process of POST /data/epg/sql: reads one JSON request {path, sql, maxRows, maxMs} on
// stdin, runs the statement on the database opened read-only and writes one JSON answer on
// stdout. Plain JavaScript so it starts without the TypeScript loader; the parent kills it
// when the time limit passes (better-sqlite3 has no way to interrupt a running statement).
import Database from 'better-sqlite3';

let input = '';
process.stdin.setEncoding('utf8');
process.stdin.on('data', (c) => {
  input += c;
});
process.stdin.on('end', () => {
  process.stdout.write(JSON.stringify(run(JSON.parse(input))));
});

function run({ path, sql, maxRows, maxMs, maxBytes }) {
  let db;
  try {
    db = new Database(path, { readonly: true, fileMustExist: true });
  } catch (err) {
    return { error: 'open', message: err.message };
  }
  // Ready: the parent starts the query's time limit on this byte.
  process.stdout.write('\n');
  try {
    let stmt;
    try {
      stmt = db.prepare(sql);
    } catch (err) {
      return { error: 'refused', message: err.message };
    }
    if (!stmt.readonly) return { error: 'refused', message: 'only read statements are allowed' };
    if (!stmt.reader) return { error: 'refused', message: 'the statement returns no rows' };
    const columns = stmt.columns().map((c) => c.name);
    stmt.raw(true);
    const rows = [];
    const started = performance.now();
    let truncated = false;
    // The answer's size is counted row by row, so an answer too large to send is refused as
    // such, at once, instead of being built and then overrunning the time limit.
    let bytes = JSON.stringify(columns).length;
    for (const row of stmt.iterate()) {
      if (rows.length >= maxRows || performance.now() - started > maxMs) {
        truncated = true;
        break;
      }
      bytes += JSON.stringify(row).length + 1;
      if (bytes > maxBytes) return { error: 'too-large', rows: rows.length };
      rows.push(row);
    }
    return { columns, rows, truncated };
  } catch (err) {
    return { error: 'failed', message: err.message };
  } finally {
    db.close();
  }
}
