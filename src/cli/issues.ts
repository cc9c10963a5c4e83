// How the CLI prints config problems: one line each, compiler style, so editors can jump to
// `file:line:column` and the JSON pointer says which member is meant.
import type { ConfigIssue } from '../config/types.ts';

export function formatIssue(file: string, issue: ConfigIssue): string {
  const where = issue.line !== undefined ? `${file}:${issue.line}:${issue.column ?? 1}` : `${file}`;
  const pointer = issue.pointer === '' ? '/' : issue.pointer;
  return `${where}: ${issue.severity} [${issue.rule}] ${pointer}: ${issue.message}`;
}

export function formatIssues(file: string, issues: ConfigIssue[]): string {
  // Errors first, then warnings, each group in document order.
  const order = (i: ConfigIssue) => (i.severity === 'error' ? 0 : 1);
  const sorted = [...issues].sort(
    (a, b) =>
      order(a) - order(b) || (a.line ?? 0) - (b.line ?? 0) || (a.column ?? 0) - (b.column ?? 0),
  );
  return sorted.map((i) => formatIssue(file, i)).join('\n');
}
