// How the CLI prints config problems: the config layer's one format (src/config/issues.ts).
import { formatIssues as format } from '../config/issues.ts';
import type { ConfigIssue } from '../config/types.ts';

export function formatIssues(file: string, issues: ConfigIssue[]): string {
  return format(issues, file);
}
