// Shapes shared by the config layer: the parsed document, the desired state built from it,
// and the issues (errors and warnings) found while reading it.
import type { ResourceKind } from './kinds.ts';
import type { Placement } from './placement.ts';

// The kinds are declared once, in the table of src/config/kinds.ts.
export {
  RECORD_KINDS,
  type RecordKind,
  type ResourceKind,
  SINGLETON_KINDS,
  type SingletonKind,
} from './kinds.ts';

/** The config file as parsed: one JSON object, only non-default members. */
export type ConfigDocument = Record<string, unknown>;

/** How a change to a field is applied (schema annotation `x-apply`). */
export type ApplyClass = 'hot' | 'restart' | 'replace' | 'fixed';

/** Reference to a resource: kind plus identity key. */
export interface ResourceRef {
  kind: ResourceKind;
  key: string;
}

/**
 * One resource of the desired state. `spec` has every default applied, so two specs compare
 * equal exactly when they mean the same thing.
 */
export interface Resource<S = Record<string, unknown>> {
  kind: ResourceKind;
  /** Identity within the kind: the id as a decimal string, `name:<stream-name>` for a
   *  stream with id 0, or the member name for a singleton. */
  key: string;
  /** Human label for plans and logs, e.g. `news` or `#3`. */
  name: string;
  /** JSON pointer of the record in the config document, e.g. `/stream/4`. */
  pointer: string;
  spec: S;
  /** Resources this one needs (created first, torn down after). */
  deps: ResourceRef[];
}

/** The desired state: every resource of a valid config, keyed by `${kind}/${key}`. */
export interface DesiredState {
  resources: Map<string, Resource>;
  /** sha256 of the config text it was built from. */
  hash: string;
  /** Which node runs what (./placement.ts); absent or with no nodes: this server runs all. */
  placement?: Placement;
}

export function resourceId(ref: ResourceRef): string {
  return `${ref.kind}/${ref.key}`;
}

/** A problem found in a config: where, which rule, what value, in plain words. */
export interface ConfigIssue {
  severity: 'error' | 'warning';
  /** JSON pointer into the document ('' = the whole document). */
  pointer: string;
  /** 1-based position in the text when known. */
  line?: number;
  column?: number;
  /** Short rule name: `syntax`, `type`, `minimum`, `enum`, `required`, `unknown-member`,
   *  `reference`, `duplicate`, `same-length`, `version`, `fixed`, … */
  rule: string;
  message: string;
  value?: unknown;
}

export class ConfigError extends Error {
  readonly code = 'CONFIG_INVALID';
  constructor(
    message: string,
    readonly issues: ConfigIssue[],
  ) {
    super(message);
    this.name = 'ConfigError';
  }
}
