// A driver for reconciler tests that records every call (in order) and fails or blocks on
// demand. It stands in for real drivers only in tests of the loop's own logic.
import type { Resource, ResourceKind } from '../../src/config/types.ts';
import type { Driver, Host, Instance, ResourceStatus } from '../../src/reconciler/driver.ts';
import type { FieldChange } from '../../src/reconciler/types.ts';

export interface CallLog {
  calls: string[];
  /** Throw this error from the next matching call (`create stream/3`, `update stream/3`). */
  failures: Map<string, () => Error>;
  /** Block a matching call until the returned promise's resolver is called. */
  gates: Map<string, Promise<void>>;
  updates: Array<{ id: string; changes: FieldChange[] }>;
}

export function newCallLog(): CallLog {
  return { calls: [], failures: new Map(), gates: new Map(), updates: [] };
}

async function hook(log: CallLog, call: string): Promise<void> {
  log.calls.push(call);
  const gate = log.gates.get(call);
  if (gate) {
    log.gates.delete(call);
    await gate;
  }
  const f = log.failures.get(call);
  if (f) throw f();
}

class FakeInstance implements Instance {
  closed = false;
  constructor(
    private res: Resource,
    private readonly log: CallLog,
  ) {}
  async update(next: Resource, changes: FieldChange[]): Promise<void> {
    const id = `${next.kind}/${next.key}`;
    await hook(this.log, `update ${id}`);
    this.log.updates.push({ id, changes });
    this.res = next;
  }
  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    await hook(this.log, `close ${this.res.kind}/${this.res.key}`);
  }
  status(): ResourceStatus {
    return { state: this.closed ? 'closed' : 'running', spec: this.res.spec };
  }
}

export function fakeDriver(kind: ResourceKind, log: CallLog): Driver {
  return {
    kind,
    async create(res: Resource, _host: Host) {
      await hook(log, `create ${res.kind}/${res.key}`);
      return new FakeInstance(res, log);
    },
  };
}

/** A promise with its resolver, to open a gate by hand. */
export function gate(): { promise: Promise<void>; open: () => void } {
  let open!: () => void;
  const promise = new Promise<void>((r) => {
    open = r;
  });
  return { promise, open };
}
