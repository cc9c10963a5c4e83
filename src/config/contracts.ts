// Contracts between the config layer, the reconciler, the sources and the API. Each part
// implements its side in its own files; this file only names the shapes they exchange.
import type { Plan } from '../reconciler/types.ts';
import type {
  ApplyClass,
  ConfigDocument,
  ConfigIssue,
  DesiredState,
  ResourceKind,
} from './types.ts';

/** What the reconciler needs to know about fields; derived from the schema annotations. */
export interface FieldRules {
  /** Apply class of the field at `path` inside a record of `kind` (`spec` selects conditional
   *  groups such as an input's `type`). Unknown paths are `restart`. */
  applyClass(
    kind: ResourceKind,
    spec: Record<string, unknown>,
    path: (string | number)[],
  ): ApplyClass;
  /** The field holds a secret (password, passphrase, key) and must be masked in output. */
  isSecret(kind: ResourceKind, spec: Record<string, unknown>, path: (string | number)[]): boolean;
  /** The member at `path` is unknown to the schema in a record that accepts it with a
   *  warning: nothing reads it, so the planner leaves its changes out. Absent = none is. */
  ignored?(kind: ResourceKind, spec: Record<string, unknown>, path: (string | number)[]): boolean;
}

/** A config text read and checked: its document, the desired state and the warnings. */
export interface LoadedConfig {
  text: string;
  doc: ConfigDocument;
  desired: DesiredState;
  warnings: ConfigIssue[];
}

/** Result of an edit through the API: the new file's ETag and what the reconciler will do. */
export interface EditResult {
  etag: string;
  plan: Plan;
  /** Git mode: the commit made for the edit. */
  commit?: string;
}

/**
 * The one owner of the desired config (file or git). The API edits through it; the watcher and
 * git poller feed it; it hands every new valid desired state to the reconcile loop.
 */
export interface ConfigService {
  /** The current document (minimal form), its text and ETag (sha256 of the text, quoted). */
  current(): { doc: ConfigDocument; text: string; etag: string };
  /**
   * Replace the whole document by `next` (already merged by the caller): validate, write the
   * minimal form atomically (git mode: commit and push), then queue a reconcile. Throws
   * ConfigError (400) when invalid, HttpError PRECONDITION_FAILED when `ifMatch` is stale,
   * HttpError CONFLICT when a git push is rejected (the edit is undone).
   */
  edit(
    mutate: (doc: ConfigDocument) => ConfigDocument,
    opts: { ifMatch?: string; message: string },
  ): Promise<EditResult>;
  /** Source description for /data/status: `file` with path or `git` with URL, branch, commit. */
  sourceInfo(): Record<string, unknown>;
}
