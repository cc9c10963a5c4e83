// Loading a config text: parse (with positions) → version check → schema → references →
// warnings → desired state. Throws ConfigError with every issue.
import type { LoadedConfig } from './contracts.ts';
import { buildDesired } from './desired.ts';
import { encOptIssues } from './enc-opt.ts';
import { formatIssues } from './issues.ts';
import { JsonSyntaxError, parseJsonWithPositions } from './json.ts';
import { place } from './placement.ts';
import { referenceIssues } from './references.ts';
import { SVC_VERSION } from './schema.ts';
import { type ConfigDocument, ConfigError, type ConfigIssue } from './types.ts';
import { schemaIssues, semanticWarnings, show, walkIssues } from './validate.ts';

function fail(issues: ConfigIssue[], source: string | undefined): never {
  const errors = issues.filter((i) => i.severity === 'error');
  const head = `${source ?? 'config'}: ${errors.length} error${errors.length === 1 ? '' : 's'}`;
  throw new ConfigError(`${head}\n${formatIssues(issues, source)}`, issues);
}

/**
 * Read and check a config text. Throws ConfigError carrying every issue (errors and the
 * warnings found alongside them) when anything is wrong; otherwise returns the document,
 * the desired state and the warnings.
 */
export function loadConfigText(text: string, opts: { source?: string } = {}): LoadedConfig {
  let parsed: ReturnType<typeof parseJsonWithPositions>;
  try {
    parsed = parseJsonWithPositions(text);
  } catch (e) {
    if (!(e instanceof JsonSyntaxError)) throw e;
    const message = e.message.replace(/ at line \d+, column \d+$/, '');
    fail(
      [
        {
          severity: 'error',
          pointer: e.pointer,
          rule: e.rule,
          message,
          line: e.line,
          column: e.column,
        },
      ],
      opts.source,
    );
  }
  const { value, positions } = parsed;
  if (value === null || typeof value !== 'object' || Array.isArray(value)) {
    const pos = positions.locate('');
    fail(
      [
        {
          severity: 'error',
          pointer: '',
          rule: 'type',
          message: `the config must be one JSON object, got ${show(value)}`,
          ...pos,
        },
      ],
      opts.source,
    );
  }
  const doc = value as ConfigDocument;

  const version = doc['x-svc-version'];
  if (version !== undefined && version !== SVC_VERSION) {
    // Rules of another version give wrong answers (spec 1): stop here.
    const pos = positions.locate('/x-svc-version');
    fail(
      [
        {
          severity: 'error',
          pointer: '/x-svc-version',
          rule: 'version',
          message: `x-svc-version is ${show(version)} but this server validates configs of version ${SVC_VERSION}`,
          value: version,
          ...pos,
        },
      ],
      opts.source,
    );
  }

  const walked = walkIssues(doc, positions);
  const placement = place(doc);
  const errors = [
    ...schemaIssues(doc, positions),
    ...walked.filter((i) => i.severity === 'error'),
    ...referenceIssues(doc, positions),
    ...placement.issues.map((i) => ({ ...i, ...positions.locateNearest(i.pointer) })),
    ...encOptIssues(doc, positions),
  ];
  const warnings = [
    ...walked.filter((i) => i.severity === 'warning'),
    ...semanticWarnings(doc, positions),
  ];
  if (errors.length > 0) fail(sortIssues([...errors, ...warnings]), opts.source);
  return { text, doc, desired: buildDesired(doc, text, placement), warnings: sortIssues(warnings) };
}

/** Issues in text order (unplaced ones last), errors before warnings at the same place. */
function sortIssues(issues: ConfigIssue[]): ConfigIssue[] {
  const big = Number.MAX_SAFE_INTEGER;
  return issues.sort(
    (a, b) =>
      (a.line ?? big) - (b.line ?? big) ||
      (a.column ?? big) - (b.column ?? big) ||
      (a.severity === b.severity ? 0 : a.severity === 'error' ? -1 : 1),
  );
}

/**
 * Issues found after loading (e.g. the planner's `fixed` refusals carry only a pointer) with
 * line:column filled in from `text`, so they read like every other config error.
 */
export function placeIssues(text: string, issues: ConfigIssue[]): ConfigIssue[] {
  if (issues.every((i) => i.line !== undefined)) return issues;
  let positions: ReturnType<typeof parseJsonWithPositions>['positions'];
  try {
    positions = parseJsonWithPositions(text).positions;
  } catch {
    return issues;
  }
  return issues.map((i) =>
    i.line !== undefined ? i : { ...i, ...positions.locateNearest(i.pointer) },
  );
}

/**
 * Load a text that is proposed, not on disk (an API edit, a dry run). Its problems are in no
 * file the reader can open, so the message names no file lines: it says what is wrong in one
 * line, and the issues (pointer, rule, line of the text as it would be written) carry the rest.
 */
export function loadProposedText(text: string): LoadedConfig {
  try {
    return loadConfigText(text);
  } catch (err) {
    if (!(err instanceof ConfigError)) throw err;
    const errors = err.issues.filter((i) => i.severity === 'error');
    const n = errors.length;
    throw new ConfigError(
      `the edit would leave the config with ${n} error${n === 1 ? '' : 's'}: ` +
        errors.map((e) => `${e.pointer || '/'}: ${e.message}`).join('; '),
      err.issues,
    );
  }
}
