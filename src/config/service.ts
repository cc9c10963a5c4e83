// The one owner of the desired config: holds the current text, document and ETag, serialises
// every change (API edits, file watcher, git poller) through one queue, validates the whole,
// persists the minimal form (file: atomic write; git: commit + push) and feeds the reconcile loop.
import { createHash } from 'node:crypto';
import type { Logger } from 'pino';
import { HttpError } from '../errors.ts';
import type { Plan } from '../reconciler/types.ts';
import type { ConfigService, EditResult, LoadedConfig } from './contracts.ts';
import {
  elideDefaults,
  formatConfig,
  formatConfigOver,
  loadConfigText,
  loadProposedText,
  placeIssues,
} from './store.ts';
import { type ConfigDocument, ConfigError, type ConfigIssue, type DesiredState } from './types.ts';

/** The part of the reconcile loop the config service talks to. */
export interface DesiredSink {
  plan(desired: DesiredState): Plan | Promise<Plan>;
  submit(desired: DesiredState, origin: string): unknown;
  reportInvalid(origin: string, issues: ConfigIssue[]): unknown;
}

/** Where an edit is stored: the file itself, or a commit in a git clone. */
export interface ConfigPersister {
  /** Store `text`. Throws (after undoing its own partial work) when it cannot. */
  persist(text: string, message: string): Promise<{ commit?: string }>;
}

/** What a source read for a refresh: the text, where it came from, and a hook run the moment
 *  it is adopted (before the loop sees it), so the source's own status is never behind. */
export interface RefreshRead {
  text: string;
  origin: string;
  onAdopt?: () => void;
}

/** What one refresh (watcher event, git poll) did. */
export type RefreshOutcome = 'unchanged' | 'applied' | 'invalid';

export interface ConfigServiceOptions {
  loop: DesiredSink;
  persister: ConfigPersister;
  log: Logger;
  /** Name used in error messages (file path or `git:<url>`). */
  source: string;
  /** Extra members for `sourceInfo()` (git head, applied commit, …), read on every call. */
  info: () => Record<string, unknown>;
}

export function sha256(text: string): string {
  return createHash('sha256').update(text).digest('hex');
}

export function etagOf(text: string): string {
  return `"${sha256(text)}"`;
}

/**
 * True when an If-Match header value names `etag`: `*` or a list holding it. The comparison is
 * strong (RFC 9110 §13.1.1): a weak tag `W/"…"` never matches, since a weak validator does not
 * promise the bytes a write is based on.
 */
export function ifMatchAccepts(header: string, etag: string): boolean {
  return header
    .split(',')
    .map((s) => s.trim())
    .some((tag) => tag === '*' || (!tag.startsWith('W/') && tag === etag));
}

/** The 412 of an If-Match that does not name the current config. */
export function preconditionFailed(header: string, etag: string): HttpError {
  const weak = header.split(',').some((s) => s.trim().startsWith('W/'));
  return new HttpError(
    'PRECONDITION_FAILED',
    `If-Match ${header} does not match the current config ${etag}${weak ? ' (a weak W/ tag never matches a write: If-Match compares strongly)' : ''}`,
  );
}

/** Runs async tasks one at a time, in submission order. */
export class SerialQueue {
  private tail: Promise<unknown> = Promise.resolve();

  run<T>(task: () => Promise<T>): Promise<T> {
    const result = this.tail.then(task, task);
    this.tail = result.catch(() => undefined);
    return result;
  }

  /** Resolves when every task queued so far has finished. */
  idle(): Promise<void> {
    return this.tail.then(() => undefined);
  }
}

/** Text of an empty config: the document `{}`. */
export function emptyConfigText(): string {
  return formatConfig({});
}

/** The plan's errors as the refusal of `text` (with line:column), or undefined when none. */
function planRefusal(text: string, plan: Plan): ConfigError | undefined {
  if (plan.errors.length === 0) return undefined;
  return new ConfigError(
    `the change cannot be applied: ${plan.errors.map((e) => e.message).join('; ')}`,
    placeIssues(text, plan.errors),
  );
}

export class ConfigServiceImpl implements ConfigService {
  private readonly queue = new SerialQueue();
  private text = '';
  private doc: ConfigDocument = {};
  private hash = '';
  /** Hash of the last text refused, so repeated events for it are not reported twice. */
  private refusedHash = '';
  private lastError: { origin: string; message: string; issues: ConfigIssue[] } | undefined;
  private lastApplied: { origin: string; hash: string } | undefined;
  /** Warnings of the text in use (unknown members ignored, …), for /data/status. */
  private warnings: ConfigIssue[] = [];

  constructor(private readonly opts: ConfigServiceOptions) {}

  current(): { doc: ConfigDocument; text: string; etag: string } {
    return { doc: structuredClone(this.doc), text: this.text, etag: `"${this.hash}"` };
  }

  /** The last refused config, if the source is currently on an invalid text. */
  invalid(): { origin: string; message: string; issues: ConfigIssue[] } | undefined {
    return this.lastError;
  }

  sourceInfo(): Record<string, unknown> {
    return {
      source: this.opts.source,
      etag: `"${this.hash}"`,
      applied: this.lastApplied?.origin,
      lastError: this.lastError
        ? { origin: this.lastError.origin, message: this.lastError.message }
        : null,
      // Without the values: a misspelt member may hold a secret, and status is read widely.
      warnings: this.warnings.map(({ value: _value, ...w }) => w),
      ...this.opts.info(),
    };
  }

  /**
   * Read the source inside the queue and apply what it holds when it differs from the current
   * text. `read` returns null when there is nothing new (e.g. the git head did not move).
   */
  refresh(read: () => Promise<RefreshRead | null>): Promise<RefreshOutcome> {
    return this.queue.run(async () => {
      const got = await read();
      if (!got) return 'unchanged';
      return await this.applyText(got);
    });
  }

  /** Adopt `text` as the desired config: validate, then hand it to the loop or report it. */
  private async applyText({ text, origin, onAdopt }: RefreshRead): Promise<RefreshOutcome> {
    const hash = sha256(text);
    // Our own write, an editor's no-op save, or a text already refused: nothing to do.
    if (hash === this.hash && !this.lastError) return 'unchanged';
    if (hash === this.refusedHash) return 'invalid';
    let loaded: LoadedConfig;
    try {
      loaded = loadConfigText(text, { source: this.opts.source });
    } catch (err) {
      if (!(err instanceof ConfigError)) throw err;
      this.refuse(hash, origin, err);
      return 'invalid';
    }
    // A change the running state cannot take (a `fixed` field) refuses the text as a whole,
    // like a schema error: the source shows it, and API edits are not built on top of it.
    const refusal = await this.planRefusal(loaded);
    if (refusal) {
      this.refuse(hash, origin, refusal);
      return 'invalid';
    }
    for (const w of loaded.warnings) this.opts.log.warn({ origin, issue: w }, w.message);
    this.adopt(loaded, hash, origin, onAdopt);
    return 'applied';
  }

  private refuse(hash: string, origin: string, err: ConfigError): void {
    this.refusedHash = hash;
    this.lastError = { origin, message: err.message, issues: err.issues };
    this.opts.log.error(
      { origin, issues: err.issues },
      `config from ${origin} refused, still running the last good one: ${err.message}`,
    );
    void Promise.resolve()
      .then(() => this.opts.loop.reportInvalid(origin, err.issues))
      .catch((e: unknown) => this.opts.log.error({ err: e }, 'reportInvalid failed'));
  }

  private adopt(loaded: LoadedConfig, hash: string, origin: string, onAdopt?: () => void): void {
    this.text = loaded.text;
    this.doc = elideDefaults(loaded.doc);
    this.hash = hash;
    this.refusedHash = '';
    this.lastError = undefined;
    this.lastApplied = { origin, hash };
    this.warnings = loaded.warnings;
    this.opts.log.info({ origin, hash }, `config from ${origin} accepted`);
    onAdopt?.();
    void Promise.resolve()
      .then(() => this.opts.loop.submit(loaded.desired, origin))
      .catch((e: unknown) => this.opts.log.error({ err: e }, 'submit failed'));
  }

  edit(
    mutate: (doc: ConfigDocument) => ConfigDocument,
    opts: { ifMatch?: string; message: string },
  ): Promise<EditResult> {
    return this.queue.run(async () => {
      if (opts.ifMatch !== undefined && !ifMatchAccepts(opts.ifMatch, `"${this.hash}"`)) {
        throw preconditionFailed(opts.ifMatch, `"${this.hash}"`);
      }
      if (this.lastError) {
        // Writing over a refused file (or git head) would silently drop the operator's text.
        throw new HttpError(
          'CONFLICT',
          `the config at ${this.lastError.origin} is invalid (${this.lastError.message}); fix it at the source first`,
        );
      }
      const next = mutate(structuredClone(this.doc));
      // The file's own layout is kept: only what the edit changes is rewritten.
      const text = formatConfigOver(this.text, elideDefaults(next));
      const loaded = loadProposedText(text);
      const plan = await this.opts.loop.plan(loaded.desired);
      const refusal = planRefusal(loaded.text, plan);
      if (refusal) throw refusal;
      const hash = sha256(text);
      // The watcher reads the file inside this same queue, so by the time it looks the current
      // hash is already this text's: our own write is never taken for an outside edit.
      const { commit } = await this.opts.persister.persist(text, opts.message);
      this.adopt(loaded, hash, commit ? `api:${commit}` : 'api');
      // The answer carries the new text's warnings (an ignored member, …), as a dry run does.
      const result: EditResult = {
        etag: `"${hash}"`,
        plan: { ...plan, warnings: [...loaded.warnings, ...plan.warnings] },
      };
      if (commit) result.commit = commit;
      return result;
    });
  }

  private async planRefusal(loaded: LoadedConfig): Promise<ConfigError | undefined> {
    return planRefusal(loaded.text, await this.opts.loop.plan(loaded.desired));
  }

  /** Resolves when every queued edit and refresh has finished. */
  idle(): Promise<void> {
    return this.queue.idle();
  }
}
