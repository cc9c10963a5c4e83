// The reconcile loop: the one writer of the running state. Desired states from the file, git
// and the API queue here and coalesce (only the newest waiting one is applied next); failed
// resources are retried with backoff; status is rebuilt from the drivers on every read.
import type { Logger } from 'pino';
import type { FieldRules } from '../config/contracts.ts';
import {
  etcdConfigured,
  MOVABLE_SERVICE,
  type MovableOwnership,
  movables,
  nodeName,
  shareOf,
} from '../config/placement.ts';
import type { ConfigIssue, DesiredState, Resource, ResourceKind } from '../config/types.ts';
import type { Clock } from '../util/clock.ts';
import { type ApplyEnv, type ApplyState, apply, newApplyState, teardownAll } from './apply.ts';
import type { Host, Instance } from './driver.ts';
import type { DriverRegistry } from './driver-registry.ts';
import { plan } from './plan.ts';
import { writeStateFile } from './state-file.ts';
import type { ApplyReport, ApplyResult, LoopStatus, Plan, ResourceStatusEntry } from './types.ts';

export interface ReconcileLoopOptions {
  registry: DriverRegistry;
  rules: FieldRules;
  host: Host;
  clock?: Clock;
  log: Logger;
  /** Where the last applied state is kept for `reconcile --plan` without a server. */
  stateFile?: string;
  /** This server's node in a fleet (docs/fleet.md): it plans and applies only its share. */
  node?: string;
}

interface Waiter {
  resolve(r: ApplyReport): void;
  reject(e: Error): void;
}

export const PENDING_NO_DRIVER = 'pending: no driver';

export class ReconcileLoop {
  private readonly state: ApplyState = newApplyState();
  private readonly clock: Clock;
  private readonly env: ApplyEnv;
  private applied?: { desired: DesiredState; origin: string; at: number };
  /** The desired state of the pass under way. */
  private applying?: DesiredState;
  private lastReport?: ApplyReport;
  private lastError?: { origin: string; at: number; issues: ConfigIssue[] };
  private next?: { desired: DesiredState; origin: string; waiters: Waiter[] };
  private retryWanted = false;
  /** The newest config submitted, whole (before this node's share was taken from it). */
  private full?: { desired: DesiredState; origin: string };
  /** The etcd claims followed (src/fleet/movable.ts) and how to stop following them. */
  private followed?: MovableOwnership;
  private unfollow?: () => void;
  private running = false;
  private draining: Promise<void> = Promise.resolve();
  private closed = false;

  constructor(private readonly opts: ReconcileLoopOptions) {
    this.clock = opts.clock ?? opts.host.clock;
    const base = opts.host;
    this.env = {
      registry: opts.registry,
      clock: this.clock,
      log: opts.log,
      onRetryDue: () => {
        this.retryWanted = true;
        this.kick();
      },
      hostFor: (res: Resource): Host => ({
        log: base.log.child({ kind: res.kind, key: res.key }),
        clock: this.clock,
        dataDir: base.dataDir,
        services: base.services,
        lookup: <T extends Instance = Instance>(kind: ResourceKind, key: string) =>
          (this.state.held.get(`${kind}/${key}`)?.instance as T | undefined) ??
          base.lookup<T>(kind, key),
      }),
    };
  }

  /** What applying `desired` would do now. */
  plan(desired: DesiredState): Plan {
    return plan(this.share(desired), this.actual(), this.opts.rules);
  }

  /** The part of `desired` this server runs (all of it outside a fleet). With etcd, a movable
   *  stream is part of it only while this node holds its claim (none before the claims are
   *  known: a restarted node never starts what another node runs). */
  private share(desired: DesiredState): DesiredState {
    const p = desired.placement;
    if (!p || p.nodes.length === 0) return desired;
    let owns: ((id: string) => boolean) | undefined;
    let holdsName = true;
    if (etcdConfigured(desired)) {
      const m = this.opts.host.services.get(MOVABLE_SERVICE);
      owns = m ? (id) => m.owns(id) : () => false;
      holdsName = m?.holdsName() ?? true;
    }
    return shareOf(desired, p, nodeName(desired, this.opts.node), owns, holdsName);
  }

  /** Tell the claims which movable streams the config has, and take the share again whenever
   *  this node's claims change (after each pass: the cluster driver publishes the claims). */
  private followMovable(): void {
    const m = this.opts.host.services.get(MOVABLE_SERVICE);
    if (m !== this.followed) {
      this.unfollow?.();
      this.followed = m;
      this.unfollow = m?.onChange(() => this.reshare());
    }
    const full = this.full?.desired;
    const p = full?.placement;
    if (m && full && p) m.want(nodeName(full, this.opts.node), movables(p));
  }

  /** Apply the newest config again with this node's current claims. */
  private reshare(): void {
    if (!this.full || this.closed) return;
    this.submit(this.full.desired, this.full.origin).catch((e) =>
      this.opts.log.error({ err: e }, 'applying the changed claims failed'),
    );
  }

  /** Queue `desired`; resolves with the report of the pass that applied it or a newer one. */
  submit(desired: DesiredState, origin: string): Promise<ApplyReport> {
    if (this.closed) return Promise.reject(new Error('the reconcile loop is closed'));
    return new Promise((resolve, reject) => {
      const waiters = this.next?.waiters ?? [];
      waiters.push({ resolve, reject });
      this.full = { desired, origin };
      this.next = { desired: this.share(desired), origin, waiters };
      this.kick();
    });
  }

  /** A config that was refused before planning (syntax, schema, references). */
  reportInvalid(origin: string, issues: ConfigIssue[]): void {
    this.lastError = { origin, at: this.clock.now(), issues };
    // The reason goes in the message itself: an operator tailing the log must see why.
    const first = issues[0]?.message ?? 'no detail';
    const more = issues.length > 1 ? ` (and ${issues.length - 1} more)` : '';
    this.opts.log.error({ origin, issues }, `configuration refused: ${first}${more}`);
  }

  actual(): Map<string, Resource> {
    const m = new Map<string, Resource>();
    for (const [id, h] of this.state.held) m.set(id, h.resource);
    return m;
  }

  instances(kind?: ResourceKind): Array<{ resource: Resource; instance: Instance }> {
    const out: Array<{ resource: Resource; instance: Instance }> = [];
    for (const h of this.state.held.values()) {
      if (h.instance && (!kind || h.resource.kind === kind)) {
        out.push({ resource: h.resource, instance: h.instance });
      }
    }
    return out;
  }

  status(): LoopStatus {
    const st: LoopStatus = {
      revision: this.applied?.desired.hash ?? '',
      origin: this.applied?.origin ?? '',
      resources: [],
    };
    if (this.applied) st.appliedAt = new Date(this.applied.at).toISOString();
    if (this.lastReport && !this.lastReport.refused) {
      const outcomes: Partial<Record<ApplyResult['outcome'], number>> = {};
      for (const r of this.lastReport.results) outcomes[r.outcome] = (outcomes[r.outcome] ?? 0) + 1;
      st.lastResult = { outcomes, summary: this.lastReport.summary };
    }
    if (this.lastError) {
      st.lastError = {
        origin: this.lastError.origin,
        at: new Date(this.lastError.at).toISOString(),
        issues: this.lastError.issues,
      };
    }
    const placement = this.applied?.desired.placement;
    if (placement && placement.nodes.length > 0 && this.applied) {
      const name = nodeName(this.applied.desired, this.opts.node);
      const me = placement.nodes.find((n) => n.name === name);
      let placed = 0;
      for (const [id, where] of placement.of)
        if (
          where !== 'everywhere' &&
          where.nodes.includes(name) &&
          this.applied.desired.resources.has(id)
        )
          placed++;
      st.node = { name, declared: !!me, labels: me?.labels ?? {}, placed };
    }
    const ids = new Set<string>(this.applied?.desired.resources.keys() ?? []);
    for (const id of this.state.held.keys()) ids.add(id);
    for (const id of ids) {
      const res = this.applied?.desired.resources.get(id) ?? this.state.held.get(id)!.resource;
      st.resources.push(this.entry(id, res));
    }
    return st;
  }

  private entry(id: string, res: Resource): ResourceStatusEntry {
    const held = this.state.held.get(id);
    const fail = this.state.failures.get(id);
    const last = this.state.last.get(id);
    const e: ResourceStatusEntry = {
      kind: res.kind,
      key: res.key,
      name: res.name,
      state: 'pending',
    };
    if (last) {
      e.action = last.action;
      e.outcome = last.outcome;
    }
    if (held?.instance) {
      try {
        const s = held.instance.status();
        e.state = s.state;
        e.status = s;
      } catch (err) {
        e.state = 'failed';
        e.error = `status: ${err instanceof Error ? err.message : String(err)}`;
      }
    } else if (held) {
      e.state = PENDING_NO_DRIVER;
    } else if (fail) {
      e.state = 'failed';
    }
    if (fail) {
      e.error = fail.error;
      e.attempts = fail.attempts;
      if (fail.retryable && fail.retryAtWall !== undefined) {
        e.nextRetryAt = new Date(fail.retryAtWall).toISOString();
      }
    }
    return e;
  }

  /** Stop accepting work, finish the pass under way, then close everything, dependents first. */
  async close(): Promise<void> {
    if (this.closed) return this.draining;
    this.closed = true;
    this.unfollow?.();
    const pending = this.next;
    this.next = undefined;
    for (const w of pending?.waiters ?? []) w.reject(new Error('the reconcile loop is closed'));
    await this.draining;
    await teardownAll(this.state, this.opts.log);
  }

  private kick(): void {
    if (this.running || this.closed) return;
    this.running = true;
    this.draining = this.drain();
  }

  private async drain(): Promise<void> {
    for (;;) {
      const job = this.next;
      if (job && !this.closed) {
        this.next = undefined;
        try {
          const report = await this.pass(job.desired, job.origin, false);
          for (const w of job.waiters) w.resolve(report);
        } catch (e) {
          for (const w of job.waiters) w.reject(e as Error);
        }
      } else if (this.retryWanted && this.applied && !this.closed) {
        this.retryWanted = false;
        await this.pass(this.applied.desired, this.applied.origin, true).catch((e) =>
          this.opts.log.error({ err: e }, 'retry pass failed'),
        );
      } else {
        this.running = false;
        return;
      }
    }
  }

  /** The desired state being applied now, else the last one applied (this node's share). */
  desiredNow(): DesiredState | undefined {
    return this.applying ?? this.applied?.desired;
  }

  private async pass(desired: DesiredState, origin: string, retry: boolean): Promise<ApplyReport> {
    const startedAt = this.clock.now();
    this.applying = desired;
    try {
      return await this.passOf(desired, origin, retry, startedAt);
    } finally {
      this.applying = undefined;
    }
  }

  private async passOf(
    desired: DesiredState,
    origin: string,
    retry: boolean,
    startedAt: number,
  ): Promise<ApplyReport> {
    const p = plan(desired, this.actual(), this.opts.rules);
    const report: ApplyReport = {
      revision: desired.hash,
      origin,
      refused: p.errors.length > 0,
      errors: p.errors,
      results: [],
      summary: p.summary,
      startedAt,
      finishedAt: startedAt,
    };
    if (report.refused) {
      this.reportInvalid(origin, p.errors);
      this.lastReport = report;
      return report;
    }
    report.results = await apply(p, desired, this.state, this.env);
    report.finishedAt = this.clock.now();
    // Failures of resources no longer desired are forgotten (and their timers cancelled).
    for (const [id, f] of this.state.failures) {
      if (!desired.resources.has(id)) {
        f.timer?.cancel();
        this.state.failures.delete(id);
      }
    }
    for (const id of this.state.last.keys()) {
      if (!desired.resources.has(id)) this.state.last.delete(id);
    }
    if (!retry) {
      this.applied = { desired, origin, at: report.finishedAt };
      this.lastError = undefined;
    }
    this.lastReport = report;
    this.logReport(report, retry);
    this.followMovable();
    await this.saveState();
    return report;
  }

  /** Held resources in the order of the applied config, then any others. */
  private heldInConfigOrder(): Resource[] {
    const out: Resource[] = [];
    const held = this.state.held;
    for (const id of this.applied?.desired.resources.keys() ?? []) {
      const h = held.get(id);
      if (h) out.push(h.resource);
    }
    for (const [id, h] of held) if (!this.applied?.desired.resources.has(id)) out.push(h.resource);
    return out;
  }

  private logReport(r: ApplyReport, retry: boolean): void {
    const counts: Record<string, number> = {};
    for (const x of r.results)
      if (x.outcome !== 'unchanged') counts[x.outcome] = (counts[x.outcome] ?? 0) + 1;
    this.opts.log.info(
      { origin: r.origin, revision: r.revision.slice(0, 12), retry, ...counts },
      'reconcile pass done',
    );
  }

  private async saveState(): Promise<void> {
    const path = this.opts.stateFile;
    if (!path || !this.applied) return;
    try {
      await writeStateFile(path, {
        format: 'sluice-state/1',
        revision: this.applied.desired.hash,
        origin: this.applied.origin,
        appliedAt: new Date(this.applied.at).toISOString(),
        resources: this.heldInConfigOrder(),
      });
    } catch (e) {
      this.opts.log.error({ err: e, path }, 'could not write the state file');
    }
  }
}
