// Test doubles for the admin API (owned by the api part): an in-memory ConfigService with
// ETags and one-at-a-time edits, a loop view, and an AppContext built from them.
import { createHash } from 'node:crypto';
import { Registry } from 'prom-client';
import type { AppContext, LoopView } from '../../src/api/context.ts';
import type { ConfigService, EditResult } from '../../src/config/contracts.ts';
import { type ConfigDocument, ConfigError, type ConfigIssue } from '../../src/config/types.ts';
import { METRICS_REGISTRY_SERVICE } from '../../src/drivers/stream/metrics.ts';
import { UserTable } from '../../src/drivers/users-table.ts';
import { HttpError } from '../../src/errors.ts';
import { silentLogger } from '../../src/log.ts';
import { OttRouter } from '../../src/ott/router.ts';
import type { Plan } from '../../src/reconciler/types.ts';
import { ManualClock } from '../../src/util/clock.ts';
import { Services } from '../../src/util/services.ts';

export function emptyPlan(): Plan {
  return {
    changes: [],
    errors: [],
    warnings: [],
    summary: { add: 0, change: 0, replace: 0, destroy: 0 },
  };
}

/** A plan naming each changed top-level member as an update of a singleton (enough to see). */
function diffPlan(before: ConfigDocument, after: ConfigDocument): Plan {
  const plan = emptyPlan();
  const keys = new Set([...Object.keys(before), ...Object.keys(after)]);
  for (const k of keys) {
    if (JSON.stringify(before[k]) === JSON.stringify(after[k])) continue;
    plan.changes.push({
      kind: 'server',
      key: k,
      name: k,
      action: 'update',
      fields: [{ path: k, before: before[k], after: after[k], apply: 'hot' }],
      forcesReplace: [],
      unchanged: 0,
    });
    plan.summary.change++;
  }
  return plan;
}

/**
 * In-memory ConfigService. `validate` returns the issues of a document (default: none);
 * any error-severity issue refuses the edit with a ConfigError, as the real one does.
 */
export class FakeConfigService implements ConfigService {
  doc: ConfigDocument;
  edits: string[] = [];
  private tail: Promise<unknown> = Promise.resolve();

  constructor(
    doc: ConfigDocument = {},
    private readonly validate: (doc: ConfigDocument) => ConfigIssue[] = () => [],
  ) {
    this.doc = structuredClone(doc);
  }

  text(): string {
    return `${JSON.stringify(this.doc, null, 2)}\n`;
  }

  etag(): string {
    return `"${createHash('sha256').update(this.text()).digest('hex')}"`;
  }

  current() {
    return { doc: structuredClone(this.doc), text: this.text(), etag: this.etag() };
  }

  edit(
    mutate: (doc: ConfigDocument) => ConfigDocument,
    opts: { ifMatch?: string; message: string },
  ): Promise<EditResult> {
    const run = async (): Promise<EditResult> => {
      if (opts.ifMatch !== undefined && opts.ifMatch !== '*' && opts.ifMatch !== this.etag()) {
        throw new HttpError('PRECONDITION_FAILED');
      }
      const next = mutate(structuredClone(this.doc));
      const errors = this.validate(next).filter((i) => i.severity === 'error');
      if (errors.length) throw new ConfigError(`${errors.length} error(s) in the config`, errors);
      const plan = diffPlan(this.doc, next);
      this.doc = next;
      this.edits.push(opts.message);
      return { etag: this.etag(), plan };
    };
    const result = this.tail.then(run, run);
    this.tail = result.catch(() => undefined);
    return result;
  }

  sourceInfo(): Record<string, unknown> {
    return { source: 'memory', etag: this.etag() };
  }
}

export class FakeLoop implements LoopView {
  plan(): Plan {
    return emptyPlan();
  }
  status(): unknown {
    return {
      revision: 'r1',
      origin: 'test',
      resources: [{ kind: 'stream', key: '1', state: 'running' }],
    };
  }
  instances(): Array<{ resource: unknown; instance: unknown }> {
    return [];
  }
}

export function fakeContext(over: Partial<AppContext> = {}): AppContext & { clock: ManualClock } {
  const users = new UserTable();
  users.set({ login: 'admin', password: 'secret', role: 'admin' });
  users.set({ login: 'viewer', password: 'look', role: 'viewer' });
  const config = over.config ?? new FakeConfigService();
  return {
    config,
    loop: new FakeLoop(),
    users,
    ottRouter: new OttRouter(),
    log: silentLogger,
    clock: new ManualClock(),
    services: new Services().set(METRICS_REGISTRY_SERVICE, new Registry()),
    planFor: (doc) => diffPlan(config.current().doc, doc),
    ...over,
  } as AppContext & { clock: ManualClock };
}
