// The reconciler's vocabulary: a closed set of actions, per-field changes, and the plan.
import type { ApplyClass, ConfigIssue, ResourceKind } from '../config/types.ts';

export type Action = 'create' | 'update' | 'replace' | 'destroy' | 'unchanged';

export interface FieldChange {
  /** Path inside the record, dotted with [i] for array items, e.g. `input[1].port`. */
  path: string;
  before: unknown;
  after: unknown;
  apply: ApplyClass;
  /** The sub-part a `restart` restarts, e.g. `input[1]`; absent = the whole instance. */
  scope?: string;
  /** The value is a secret (password, passphrase, key): renderers mask it. */
  secret?: boolean;
}

export interface ResourceChange {
  kind: ResourceKind;
  key: string;
  name: string;
  action: Action;
  /** Changed fields (update / replace), or every set field (create / destroy). */
  fields: FieldChange[];
  /** For replace: the fields that force it. */
  forcesReplace: string[];
  /** Number of unchanged fields not shown. */
  unchanged: number;
}

export interface Plan {
  changes: ResourceChange[];
  /** Errors that make the whole plan unappliable (e.g. a `fixed` field changed). */
  errors: ConfigIssue[];
  warnings: ConfigIssue[];
  summary: { add: number; change: number; replace: number; destroy: number };
}

/** Outcome of applying one resource change. */
export interface ApplyResult {
  kind: ResourceKind;
  key: string;
  name: string;
  outcome: 'created' | 'updated' | 'replaced' | 'destroyed' | 'unchanged' | 'failed' | 'pending';
  error?: string;
  retryable?: boolean;
}
