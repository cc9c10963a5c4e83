// What the admin API needs from the rest of the server. main.ts builds one AppContext and
// hands it to buildApp(); tests build one from fakes.
import type { ConfigService } from '../config/contracts.ts';
import type { ConfigDocument, DesiredState } from '../config/types.ts';
import type { UserTable } from '../drivers/users-table.ts';
import type { Logger } from '../log.ts';
import type { OttRouter } from '../ott/router.ts';
import type { Plan } from '../reconciler/types.ts';
import type { Clock } from '../util/clock.ts';
import type { Services } from '../util/services.ts';
import type { DigestAlgorithm } from './auth/digest.ts';

/** The part of the reconcile loop the API reads. */
export interface LoopView {
  /** What applying `desired` would do against the running state (pure). */
  plan(desired: DesiredState): Plan;
  /** Revision, last apply result, last error, per-resource status (for /data/status). */
  status(): unknown;
  /** Running instances, optionally of one kind. */
  instances(kind?: string): Array<{ resource: unknown; instance: unknown }>;
}

export interface AppContext {
  config: ConfigService;
  loop: LoopView;
  users: UserTable;
  ottRouter: OttRouter;
  log: Logger;
  clock: Clock;
  /** Shared services (e.g. `metrics-registry`: a prom-client Registry). */
  services: Services;
  /** Digest realm; default `sluice`. */
  realm?: string;
  /** Seconds a Digest nonce stays valid; default 300. */
  nonceLifetimeSec?: number;
  /** Digest algorithms offered, in order of preference; default SHA-256 then MD5. */
  digestAlgorithms?: DigestAlgorithm[];
  /**
   * Plan of a whole document against the running state, for `POST /config/plan` and
   * `?dry-run`; throws ConfigError when invalid. Default: load the document with the config
   * loader (validate, apply defaults) and ask `loop.plan`.
   */
  planFor?: (doc: ConfigDocument) => Plan | Promise<Plan>;
}

export const DEFAULT_REALM = 'sluice';
export const DEFAULT_NONCE_LIFETIME_SEC = 300;
