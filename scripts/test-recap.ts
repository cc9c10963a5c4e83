// The closing lines of scripts/test: from tap's TAP log, every failing test file and, under it,
// each failing assertion with its subtest path and source line — so the tail of a CI log, which
// is all anyone sees, says what failed. `tsx scripts/test-recap.ts <log>` prints them.
import { readFileSync } from 'node:fs';

export interface Failure {
  /** The test file (the top-level subtest tap names after it). */
  file: string;
  /** Subtest names below the file, the failing assertion's name last. */
  path: string[];
  /** `file:line` of the failing assertion when tap's diagnostics name one. */
  at?: string;
  /** How a file that failed as a whole ended, e.g. `exit code 3` or `signal SIGKILL`. */
  ended?: string;
}

const SUBTEST = /^(\s*)# Subtest: (.*)$/;
const RESULT = /^(\s*)(ok|not ok) \d+(?: - (.*?))?(?: # (.*))?$/;
const AT_FILE = /^\s+fileName: (.*)$/;
const AT_LINE = /^\s+lineNumber: (\d+)$/;
const ENDED = /^\s+(exitCode|signal): (\S+)$/;

/** Failing leaves of a TAP log: an assertion that failed, or a subtest that failed with no failing
 *  assertion inside it (it threw, or timed out). TODO and SKIP results are not failures. */
export function failures(log: string): Failure[] {
  const out: Failure[] = [];
  // Open subtests, with how many failures have been recorded since each opened.
  const open: { indent: number; name: string; seen: number }[] = [];
  let pending: Failure | undefined;
  for (const line of log.split('\n')) {
    if (pending) {
      const f = AT_FILE.exec(line);
      const n = AT_LINE.exec(line);
      if (f) pending.at = f[1]!.trim();
      else if (n && pending.at && !pending.at.includes(':')) pending.at += `:${n[1]}`;
      const e = ENDED.exec(line);
      if (e && e[2] !== 'null' && e[2] !== '0' && !pending.ended) {
        pending.ended = `${e[1] === 'signal' ? 'signal' : 'exit code'} ${e[2]}`;
      }
      if (/^\s+\.\.\.$/.test(line) || RESULT.test(line) || SUBTEST.test(line)) pending = undefined;
    }
    const s = SUBTEST.exec(line);
    if (s) {
      const indent = s[1]!.length;
      while (open.length && open[open.length - 1]!.indent >= indent) open.pop();
      open.push({ indent, name: s[2]!, seen: out.length });
      continue;
    }
    const r = RESULT.exec(line);
    if (!r) continue;
    const indent = r[1]!.length;
    const name = r[3] ?? '';
    const directive = r[4] ?? '';
    while (open.length && open[open.length - 1]!.indent > indent) open.pop();
    const top = open[open.length - 1];
    const closes = top !== undefined && top.indent === indent && top.name === name;
    if (closes) open.pop();
    if (r[2] === 'ok' || /^(todo|skip)\b/i.test(directive)) continue;
    if (closes && out.length > top.seen) continue;
    const [file, ...path] = [...open.map((o) => o.name), name];
    pending = { file: file!, path };
    out.push(pending);
  }
  return out;
}

/** The recap: `FAILED <file>` and an indented line per failure, at most `maxLines` lines. */
export function recap(log: string, maxLines = 40): string[] {
  const byFile = new Map<string, Failure[]>();
  for (const f of failures(log)) byFile.set(f.file, [...(byFile.get(f.file) ?? []), f]);
  const lines: string[] = [];
  for (const [file, fs] of byFile) {
    lines.push(`FAILED ${file}`);
    for (const f of fs) {
      const what = f.path.length
        ? f.path.join(' > ')
        : `(the file itself${f.ended ? `: ${f.ended}` : ''})`;
      lines.push(`  ${what}${f.at ? `  (${f.at})` : ''}`);
    }
  }
  if (lines.length <= maxLines) return lines;
  const shown = lines.slice(0, maxLines - 1);
  shown.push(`… and ${lines.length - shown.length} more lines: search the log for "not ok"`);
  return shown;
}

if (process.argv[1] && import.meta.url.endsWith(process.argv[1].split('/').pop()!)) {
  const file = process.argv[2];
  if (!file) {
    console.error('usage: tsx scripts/test-recap.ts <tap log>');
    process.exit(2);
  }
  for (const l of recap(readFileSync(file, 'utf8'))) console.log(l);
}
