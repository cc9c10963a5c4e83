// Apply: carry out a plan against the drivers, in dependency order, one resource failing
// without blocking the others. Failures are remembered with their backoff; the loop retries.
import type { Logger } from 'pino';
import type { DesiredState, Resource } from '../config/types.ts';
import { resourceId } from '../config/types.ts';
import type { Clock, Timer } from '../util/clock.ts';
import { DriverError, type Host, type Instance } from './driver.ts';
import type { DriverRegistry } from './driver-registry.ts';
import { orderLevels } from './order.ts';
import type { Action, ApplyResult, Plan, ResourceChange } from './types.ts';
import { deepEqual, resourceLabel } from './values.ts';

/** First retry delay of a retryable failure; doubles per attempt up to the maximum. */
export const BACKOFF_INITIAL_MS = 1_000;
export const BACKOFF_MAX_MS = 5 * 60_000;
/** Resources of one dependency level applied at the same time. */
export const LEVEL_CONCURRENCY = 16;

/** A resource the reconciler holds: running (instance) or accepted without a driver. */
export interface Held {
  resource: Resource;
  instance?: Instance;
}

export interface FailureRecord {
  /** The desired spec that failed; a different spec is tried at once. */
  spec: Record<string, unknown>;
  action: Action;
  error: string;
  retryable: boolean;
  attempts: number;
  /** Monotonic ms of the next attempt (retryable only). */
  retryAt?: number;
  /** Wall-clock ms of the next attempt, for status. */
  retryAtWall?: number;
  timer?: Timer;
}

/** The reconciler's memory between passes. */
export interface ApplyState {
  held: Map<string, Held>;
  failures: Map<string, FailureRecord>;
  /** Last action and outcome per resource, for status. */
  last: Map<string, { action: Action; outcome: ApplyResult['outcome']; error?: string }>;
}

export function newApplyState(): ApplyState {
  return { held: new Map(), failures: new Map(), last: new Map() };
}

export interface ApplyEnv {
  registry: DriverRegistry;
  clock: Clock;
  log: Logger;
  /** Host handed to a driver creating `res` (child logger, lookup of running instances). */
  hostFor(res: Resource): Host;
  /** Called when a retry of a failed resource falls due. */
  onRetryDue(): void;
}

export function backoffDelay(attempts: number): number {
  return Math.min(BACKOFF_MAX_MS, BACKOFF_INITIAL_MS * 2 ** Math.max(0, attempts - 1));
}

/**
 * Run `plan` (made from `desired` against `state.held`). A plan with errors must not reach
 * here. Teardown (destroys, the close half of replaces) runs first in reverse dependency order
 * over what runs now; then creates, replaces and updates in dependency order over `desired`.
 */
export async function apply(
  plan: Plan,
  desired: DesiredState,
  state: ApplyState,
  env: ApplyEnv,
): Promise<ApplyResult[]> {
  if (plan.errors.length) throw new Error('apply: the plan has errors and cannot be applied');
  const byId = new Map<string, ResourceChange>();
  for (const ch of plan.changes) byId.set(resourceId(ch), ch);
  const results = new Map<string, ApplyResult>();
  const closedForReplace = new Set<string>();

  // Teardown, dependents first.
  const current = new Map<string, Resource>();
  for (const [id, h] of state.held) current.set(id, h.resource);
  const down = orderLevels(current).levels.reverse();
  for (const level of down) {
    await pool(level, async (id) => {
      const ch = byId.get(id);
      if (ch?.action !== 'destroy' && ch?.action !== 'replace') return;
      const h = state.held.get(id)!;
      const err = await closeQuietly(h, env.log);
      state.held.delete(id);
      if (ch.action === 'replace') {
        closedForReplace.add(id);
        if (err)
          env.log.warn({ kind: ch.kind, key: ch.key, err: err }, 'close before replace failed');
        return;
      }
      clearFailure(state, id);
      results.set(id, result(ch, err ? 'failed' : 'destroyed', err));
    });
  }

  // Bring-up, dependencies first.
  const order = orderLevels(desired.resources);
  if (order.cycles.length) env.log.warn({ ids: order.cycles }, 'dependency cycle ignored');
  for (const level of order.levels) {
    await pool(level, async (id) => {
      const ch = byId.get(id);
      const res = desired.resources.get(id)!;
      if (!ch) return;
      const r = await bringUp(id, ch, res, state, env, closedForReplace.has(id));
      if (r) results.set(id, r);
    });
  }

  const out: ApplyResult[] = [];
  for (const ch of plan.changes) {
    const id = resourceId(ch);
    const r = results.get(id) ?? result(ch, 'unchanged');
    state.last.set(id, { action: ch.action, outcome: r.outcome, error: r.error });
    out.push(r);
  }
  return out;
}

async function bringUp(
  id: string,
  ch: ResourceChange,
  res: Resource,
  state: ApplyState,
  env: ApplyEnv,
  replacing: boolean,
): Promise<ApplyResult | undefined> {
  const held = state.held.get(id);
  const driver = env.registry.get(res.kind);
  // Level-based: an accepted resource whose driver appeared since is created now.
  const adopt = ch.action === 'unchanged' && held && !held.instance && driver;
  if (ch.action === 'unchanged' && !adopt) return undefined;

  const fail = state.failures.get(id);
  if (fail && deepEqual(fail.spec, res.spec)) {
    const due =
      fail.retryable && fail.retryAt !== undefined && env.clock.monotonic() >= fail.retryAt;
    if (!due) return { ...result(ch, 'failed', fail.error), retryable: fail.retryable };
  }

  if (!driver) {
    state.held.set(id, { resource: res });
    clearFailure(state, id);
    return result(ch, 'pending');
  }
  try {
    if (ch.action === 'update' && held?.instance) {
      await held.instance.update(res, ch.fields);
      held.resource = res;
      clearFailure(state, id);
      return result(ch, 'updated');
    }
    const instance = await driver.create(res, env.hostFor(res));
    state.held.set(id, { resource: res, instance });
    clearFailure(state, id);
    return result(ch, replacing ? 'replaced' : 'created');
  } catch (e) {
    const retryable = e instanceof DriverError ? e.retryable : true;
    const message = e instanceof Error ? e.message : String(e);
    recordFailure(id, ch, res, message, retryable, state, env);
    return { ...result(ch, 'failed', message), retryable };
  }
}

function recordFailure(
  id: string,
  ch: ResourceChange,
  res: Resource,
  error: string,
  retryable: boolean,
  state: ApplyState,
  env: ApplyEnv,
): void {
  const prev = state.failures.get(id);
  prev?.timer?.cancel();
  const attempts = (prev && deepEqual(prev.spec, res.spec) ? prev.attempts : 0) + 1;
  const rec: FailureRecord = { spec: res.spec, action: ch.action, error, retryable, attempts };
  const label = resourceLabel(ch.kind, ch.key, ch.name);
  if (retryable) {
    const delay = backoffDelay(attempts);
    rec.retryAt = env.clock.monotonic() + delay;
    rec.retryAtWall = env.clock.now() + delay;
    rec.timer = env.clock.setTimeout(() => env.onRetryDue(), delay);
    env.log.warn(
      { kind: ch.kind, key: ch.key, attempts, retryInMs: delay, error },
      `${label} failed`,
    );
  } else {
    env.log.error(
      { kind: ch.kind, key: ch.key, error },
      `${label} failed; waiting for a config change`,
    );
  }
  state.failures.set(id, rec);
}

function clearFailure(state: ApplyState, id: string): void {
  state.failures.get(id)?.timer?.cancel();
  state.failures.delete(id);
}

async function closeQuietly(h: Held, log: Logger): Promise<string | undefined> {
  if (!h.instance) return undefined;
  try {
    await h.instance.close();
    return undefined;
  } catch (e) {
    const message = e instanceof Error ? e.message : String(e);
    log.warn({ kind: h.resource.kind, key: h.resource.key, error: message }, 'close failed');
    return message;
  }
}

function result(ch: ResourceChange, outcome: ApplyResult['outcome'], error?: string): ApplyResult {
  const r: ApplyResult = { kind: ch.kind, key: ch.key, name: ch.name, outcome };
  if (error !== undefined) r.error = error;
  return r;
}

/** Run `fn` over `items` with at most LEVEL_CONCURRENCY at a time. */
async function pool(items: string[], fn: (id: string) => Promise<void>): Promise<void> {
  let next = 0;
  const worker = async () => {
    while (next < items.length) await fn(items[next++]!);
  };
  await Promise.all(Array.from({ length: Math.min(LEVEL_CONCURRENCY, items.length) }, worker));
}

/** Close everything held, dependents first (server shutdown). */
export async function teardownAll(state: ApplyState, log: Logger): Promise<void> {
  const current = new Map<string, Resource>();
  for (const [id, h] of state.held) current.set(id, h.resource);
  for (const level of orderLevels(current).levels.reverse()) {
    await pool(level, async (id) => {
      const h = state.held.get(id);
      if (h) await closeQuietly(h, log);
      state.held.delete(id);
    });
  }
  for (const f of state.failures.values()) f.timer?.cancel();
  state.failures.clear();
}
