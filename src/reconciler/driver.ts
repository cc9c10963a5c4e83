// The driver contract: one Driver per resource kind (a long-lived factory), one Instance per
// running resource. The reconciler is the only caller of create / update / close.
import type { Logger } from 'pino';
import type { AppliedSpecByKind } from '../config/spec-types.generated.ts';
import type { ApplyClass, Resource, ResourceKind } from '../config/types.ts';
import type { Clock } from '../util/clock.ts';
import type { Services } from '../util/services.ts';
import type { FieldChange } from './types.ts';

/** Health of a running resource as its driver sees it, rebuilt on every read. */
export interface ResourceStatus {
  /** Driver-specific state word, e.g. `running`, `no-signal`, `ready`, `error`. */
  state: string;
  /** Human-readable detail when the state is not fine. */
  message?: string;
  /** Warnings the resource reports about itself (e.g. `lnb-polarization is not set`). */
  warnings?: string[];
  /** Anything else the driver wants `/data/status` to show. */
  [extra: string]: unknown;
}

/** One running resource. */
export interface Instance<S = Record<string, unknown>> {
  /**
   * Apply an in-place change. `changes` lists every changed field with its apply class
   * (`hot` or `restart`; `replace` and `fixed` never reach here). `restart` changes carry a
   * `scope` naming the sub-part to restart (e.g. `input[1]`); a driver restarts only that.
   */
  update(next: Resource<S>, changes: FieldChange[]): Promise<void>;
  /** Stop and release everything (sockets, files, children). Must be idempotent. */
  close(): Promise<void>;
  status(): ResourceStatus;
}

/** What a driver gets from the server it runs in. */
export interface Host {
  log: Logger;
  clock: Clock;
  /** Directory for the server's own state (archive indexes, last applied config, …). */
  dataDir: string;
  /** The running instance of another resource, if any (e.g. a stream asks for its storage). */
  lookup<T extends Instance<never> = Instance>(kind: ResourceKind, key: string): T | undefined;
  /** Shared services registered by drivers or the server (HTTP routes, EPG bus, …). */
  services: Services;
}

export interface Driver<S = Record<string, unknown>> {
  readonly kind: ResourceKind;
  create(res: Resource<S>, host: Host): Promise<Instance<S>>;
}

/** A kind's record as the reconciler hands it to the kind's driver: validated, with every
 *  default applied (src/config/desired.ts), so a driver reads `spec.pause` as a boolean and
 *  repeats no default. Generated from schemas/ (src/config/spec-types.generated.ts). */
export type SpecOf<K extends ResourceKind> = AppliedSpecByKind[K];

/** A driver typed by its kind's record. */
export interface KindDriver<K extends ResourceKind> extends Driver<SpecOf<K>> {
  readonly kind: K;
}

/** The reconciler's view of a typed driver. The record type is erased here and only here:
 *  the reconciler hands a driver only records of its kind, checked against the kind's schema
 *  with defaults applied, which is what SpecOf<K> describes. */
export function erased<K extends ResourceKind>(driver: KindDriver<K>): Driver {
  return driver as unknown as Driver;
}

/**
 * Error thrown by a driver. `retryable` faults (a port busy, a device not there yet) are
 * retried with backoff; terminal ones wait until the desired spec changes.
 */
export class DriverError extends Error {
  constructor(
    message: string,
    readonly retryable: boolean,
    readonly code = retryable ? 'DRIVER_RETRYABLE' : 'DRIVER_TERMINAL',
  ) {
    super(message);
    this.name = 'DriverError';
  }
}

export type { ApplyClass };
