// How a config problem reads, everywhere (`sluice validate`, `reconcile --plan`, the log,
// /data/status): one line each, compiler style, so an editor jumps to `file:line:column` and
// the JSON pointer says which member is meant.
import type { ConfigIssue } from './types.ts';

/** One issue as `FILE:line:column: severity [rule] /pointer: message` (the file or the
 *  position is left out when unknown). */
export function formatIssue(issue: ConfigIssue, source?: string): string {
  const pos = issue.line !== undefined ? [issue.line, issue.column ?? 1] : [];
  const where = [source, ...pos].filter((x) => x !== undefined).join(':');
  const pointer = issue.pointer === '' ? '/' : issue.pointer;
  return `${where ? `${where}: ` : ''}${issue.severity} [${issue.rule}] ${pointer}: ${issue.message}`;
}

/** Issues one a line: errors first, then warnings, each group in document order. */
export function formatIssues(issues: ConfigIssue[], source?: string): string {
  const order = (i: ConfigIssue) => (i.severity === 'error' ? 0 : 1);
  const sorted = [...issues].sort(
    (a, b) =>
      order(a) - order(b) || (a.line ?? 0) - (b.line ?? 0) || (a.column ?? 0) - (b.column ?? 0),
  );
  return sorted.map((i) => formatIssue(i, source)).join('\n');
}
