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
  /** For a whole record added or removed (e.g. `input[2]`): paths inside the value that are
   *  secrets (e.g. `passphrase`), masked by renderers while the rest stays visible. */
  secretPaths?: string[];
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

/** What one pass of the reconcile loop did with one desired state. */
export interface ApplyReport {
  /** Hash of the desired state the pass applied (or refused). */
  revision: string;
  origin: string;
  /** The plan had errors (e.g. a `fixed` field changed): nothing was touched. */
  refused: boolean;
  errors: ConfigIssue[];
  results: ApplyResult[];
  summary: Plan['summary'];
  startedAt: number;
  finishedAt: number;
}

/** One resource as `/data/status` shows it, rebuilt from the drivers on every read. */
export interface ResourceStatusEntry {
  kind: ResourceKind;
  key: string;
  name: string;
  /** Last action planned for it and what came of it. */
  action?: Action;
  outcome?: ApplyResult['outcome'];
  /** `instance.status().state`, `pending: no driver`, or `failed`. */
  state: string;
  error?: string;
  attempts?: number;
  /** ISO time of the next retry of a failed resource. */
  nextRetryAt?: string;
  status?: Record<string, unknown>;
}

export interface LoopStatus {
  /** Hash of the last applied desired state ('' before the first). */
  revision: string;
  origin: string;
  appliedAt?: string;
  lastResult?: {
    outcomes: Partial<Record<ApplyResult['outcome'], number>>;
    summary: Plan['summary'];
  };
  lastError?: { origin: string; at: string; issues: ConfigIssue[] };
  /** In a fleet (docs/fleet.md): this server's node, its labels, and how many placed
   *  resources of the applied config are its share. */
  node?: { name: string; declared: boolean; labels: Record<string, string>; placed: number };
  resources: ResourceStatusEntry[];
}
