// Movable streams: each runs on one of the nodes its placement admits, on the node that holds
// its claim in etcd. A claim is a key bound to the holder's lease, so it vanishes when the
// holder stops renewing (it died, or lost etcd for longer than the lease TTL); the other
// eligible nodes then see the delete and the one the stable hash prefers among the live ones
// claims it (a transaction that succeeds only while the key is absent: one winner). Claims are
// sticky: a node that comes back claims nothing that is held. Docs: docs/fleet.md, "Movable
// streams".
//
// etcd unreachable: a node keeps running what it holds and says so in its status; it starts
// nothing new (a claim needs a transaction). When it reaches etcd again with a new lease it
// renews each claim that is still its own or free, and gives up (stops) each one another node
// took meanwhile: that is the fence. Between the two, a node cut off from etcd while the others
// still reach it runs its streams beside their new holder until it reaches etcd again.
//
// Claims are this node's by lease, never by name: a claim is ours only under a lease this
// process was granted. A second server with the same node name is refused its name (and so
// every claim) while the first one's lease lives (node-name.ts).
import { Etcd3, type Lease } from 'etcd3';
import type { Logger } from 'pino';
import { type MovableOwnership, pick } from '../config/placement.ts';
import {
  duplicateMessage,
  leaseHex,
  type NodeHolder,
  nodeValue,
  registerNode,
} from './node-name.ts';

export interface MovableSettings {
  endpoints: string[];
  /** Seconds. */
  leaseTtl: number;
  prefix: string;
}

/** `refused`: another live server has this node name; this one claims nothing meanwhile. */
export type MovableState = 'connecting' | 'connected' | 'refused' | 'unreachable' | 'closed';

export interface MovableStatus {
  state: MovableState;
  node: string;
  endpoints: string[];
  leaseTtl: number;
  /** The lease this node's claims are bound to (hex), while it has one. */
  lease?: string;
  /** Movable streams this node holds (`stream/7`). */
  held: string[];
  /** Movable streams of the config and their holder ('' = none), as last read. */
  holders: Record<string, string>;
  /** Nodes that have a live lease, as last read. */
  alive: string[];
  /** The server that has this node's name, while this one is refused it. */
  refusedBy?: NodeHolder;
  lastError?: string;
}

/** The claims this node should try to take: free, eligible here, and this node is the stable
 *  choice among the eligible nodes that are alive (itself counted alive). `joining`: this node
 *  has only just joined, so it takes only what the stable choice among *all* eligible nodes
 *  gives it, leaving the others' share to nodes starting beside it. Pure. */
export function claimsToTake(
  me: string,
  want: ReadonlyMap<string, string[]>,
  holders: ReadonlyMap<string, string>,
  alive: ReadonlySet<string>,
  joining = false,
): string[] {
  const out: string[] = [];
  const named = (list: string[]) => list.map((name) => ({ name }));
  for (const [id, eligible] of want) {
    if (holders.has(id) || !eligible.includes(me)) continue;
    const live = eligible.filter((n) => n === me || alive.has(n));
    const among = joining ? eligible : live;
    if (pick(named(among), id) === me) out.push(id);
  }
  return out;
}

/** Delay before retrying etcd after a failure: 0.5 s doubling to 8 s. */
function backoffMs(failures: number): number {
  return Math.min(8000, 500 * 2 ** Math.min(failures, 4));
}

/** How long a change of view waits for others to join it, ms. */
const SETTLE_MS = 50;
/** A node that has just joined takes only its own preferred share for this part of the lease
 *  TTL, so that a fleet started together spreads as placement would. */
const JOIN_GRACE_OF_TTL = 0.5;

export class MovableClaims implements MovableOwnership {
  private client?: Etcd3;
  private lease?: Lease;
  private leaseId?: string;
  /** Every lease this process was granted: what a claim must be under to be ours. */
  private ownLeases = new Set<string>();
  /** This node's name is registered under the current lease. */
  private joined = false;
  private refusedBy?: NodeHolder;
  /** When this server first tried to join (its node key says it). */
  private readonly since = new Date().toISOString();
  private state: MovableState = 'connecting';
  private me = '';
  private wanted = new Map<string, string[]>();
  /** What this node runs: claims it took (kept while etcd is unreachable). */
  private held = new Set<string>();
  private holders = new Map<string, string>();
  /** The lease each claim is under, as last read. */
  private claimLeases = new Map<string, string>();
  private alive = new Set<string>();
  private listeners = new Set<() => void>();
  private lastError?: string;
  private failures = 0;
  private timer?: NodeJS.Timeout;
  private resync?: NodeJS.Timeout;
  private watcherStop?: () => void;
  private busy = false;
  private again = false;
  /** When this node first had a lease (ms, monotonic). */
  private joinedAt?: number;

  constructor(
    private readonly settings: MovableSettings,
    private readonly log: Logger,
  ) {}

  owns(id: string): boolean {
    return this.held.has(id);
  }

  /** False while refused: another live server has this node's name. Until etcd has answered
   *  (or while it is unreachable) the node keeps running what is placed on it. */
  holdsName(): boolean {
    return this.state !== 'refused';
  }

  onChange(fn: () => void): () => void {
    this.listeners.add(fn);
    return () => this.listeners.delete(fn);
  }

  want(node: string, movable: ReadonlyMap<string, string[]>): void {
    const first = this.me === '';
    // Called after every reconcile pass: only a change of the movable set asks etcd again.
    const same =
      node === this.me &&
      movable.size === this.wanted.size &&
      [...movable].every(([id, nodes]) => this.wanted.get(id)?.join() === nodes.join());
    if (same) return;
    this.me = node;
    this.wanted = new Map(movable);
    if (first) this.connect();
    else this.schedule();
  }

  status(): MovableStatus {
    return {
      state: this.state,
      node: this.me,
      endpoints: this.settings.endpoints,
      leaseTtl: this.settings.leaseTtl,
      ...(this.leaseId ? { lease: leaseHex(this.leaseId) } : {}),
      held: [...this.held].sort(),
      holders: Object.fromEntries(
        [...this.wanted.keys()].map((id) => [id, this.holders.get(id) ?? '']),
      ),
      alive: [...this.alive].sort(),
      ...(this.refusedBy ? { refusedBy: this.refusedBy } : {}),
      ...(this.lastError ? { lastError: this.lastError } : {}),
    };
  }

  /** Give the claims up (the node stops or leaves etcd): revoking the lease deletes them, so
   *  the other nodes take them over at once instead of after the TTL. */
  async close(): Promise<void> {
    if (this.state === 'closed') return;
    this.state = 'closed';
    clearTimeout(this.timer);
    clearInterval(this.resync);
    this.watcherStop?.();
    const lease = this.lease;
    this.lease = undefined;
    if (lease) await lease.revoke().catch(() => {});
    this.client?.close();
    this.client = undefined;
  }

  private graceMs(): number {
    return this.settings.leaseTtl * 1000 * JOIN_GRACE_OF_TTL;
  }

  private key(kind: 'node' | 'claim', name: string): string {
    return `${this.settings.prefix}/${kind}/${encodeURIComponent(name)}`;
  }

  private emit(): void {
    for (const fn of [...this.listeners]) fn();
  }

  private connect(): void {
    if (this.state === 'closed') return;
    clearTimeout(this.timer);
    this.timer = undefined;
    this.client ??= new Etcd3({ hosts: this.settings.endpoints, dialTimeout: 2000 });
    const client = this.client;
    const lease = client.lease(this.settings.leaseTtl, { autoKeepAlive: true });
    this.lease = lease;
    // A failed renewal is reported at once; the lease is given up only once etcd says it
    // expired, or after twice its TTL without contact (the client's rule: 'lost').
    lease.on('keepaliveFailed', () => {
      if (this.lease !== lease || (this.state !== 'connected' && this.state !== 'refused')) return;
      this.state = 'unreachable';
      this.lastError = 'lease renewal failed';
    });
    lease.on('keepaliveSucceeded', () => {
      if (this.lease !== lease || this.state !== 'unreachable' || !this.leaseId) return;
      this.state = this.joined ? 'connected' : 'refused';
      this.lastError = this.joined ? undefined : this.refusal();
    });
    lease.on('lost', (err: Error) => {
      if (this.lease !== lease || this.state === 'closed') return;
      this.lease = undefined;
      this.leaseId = undefined;
      this.fail(`lease lost: ${err.message}`);
    });
    void (async () => {
      try {
        this.joined = false;
        this.leaseId = await lease.grant();
        this.ownLeases.add(this.leaseId);
        if (!this.watcherStop) {
          const w = await client.watch().prefix(`${this.settings.prefix}/`).create();
          w.on('data', () => this.schedule());
          w.on('error', () => {});
          this.watcherStop = () => void w.cancel().catch(() => {});
        }
        // Refused the name: whatever this node held is no longer surely its own; stop it.
        if (await this.join()) await this.renewHeld();
        else this.dropHeld();
        this.failures = 0;
        // A missed event never leaves the view stale for longer than half a lease.
        clearInterval(this.resync);
        this.resync = setInterval(() => this.schedule(), (this.settings.leaseTtl * 1000) / 2);
        this.resync.unref();
        this.schedule();
      } catch (e) {
        if (this.lease === lease) {
          this.lease = undefined;
          this.leaseId = undefined;
          lease.release();
          this.fail((e as Error).message);
        }
      }
    })();
  }

  private fail(message: string): void {
    if (this.state === 'closed') return;
    const was = this.state;
    this.state = 'unreachable';
    this.lastError = message;
    if (was !== 'unreachable')
      this.log.warn(
        { held: this.held.size, err: message },
        'etcd unreachable: keeping the movable streams this node runs, starting none',
      );
    clearTimeout(this.timer);
    this.timer = setTimeout(() => this.connect(), backoffMs(this.failures++));
    this.timer.unref();
  }

  /** Register this node's name under the current lease; false while another server has it
   *  (state `refused`, said loudly once per holder). */
  private async join(): Promise<boolean> {
    const r = await registerNode(
      this.client!,
      this.key('node', this.me),
      nodeValue(this.since),
      this.leaseId!,
      this.ownLeases,
    );
    if (r.joined) {
      const wasRefused = this.state === 'refused';
      if (this.refusedBy)
        this.log.warn({ node: this.me }, 'node name free again: this server joins under it');
      this.joined = true;
      this.refusedBy = undefined;
      this.state = 'connected';
      this.lastError = undefined;
      // What is placed on the name (pinned streams) runs here again.
      if (wasRefused) this.emit();
      if (this.joinedAt === undefined) {
        this.joinedAt = performance.now();
        // When the grace ends, look again: what other nodes did not take falls to this one.
        const grace = setTimeout(() => this.schedule(), this.graceMs() + SETTLE_MS);
        grace.unref();
      }
      return true;
    }
    if (r.heldBy && r.heldBy.lease !== this.refusedBy?.lease) {
      this.refusedBy = r.heldBy;
      this.log.error(
        { node: this.me, holder: r.heldBy },
        duplicateMessage(this.me, r.heldBy, this.settings.leaseTtl),
      );
    }
    const newly = this.state !== 'refused';
    this.state = 'refused';
    this.lastError = this.refusal();
    // Nothing placed on the name runs here while it is another server's.
    if (newly) this.emit();
    return false;
  }

  private refusal(): string {
    return this.refusedBy
      ? duplicateMessage(this.me, this.refusedBy, this.settings.leaseTtl)
      : `node name ${this.me} changed while joining; trying again`;
  }

  /** Stop running every claim this node held (its name is another server's now). */
  private dropHeld(): void {
    if (this.held.size === 0) return;
    this.log.warn({ held: [...this.held] }, 'not this node by name any more: stopping its streams');
    this.held.clear();
    this.emit();
  }

  /** A claim under an earlier lease of this process, moved to the current one (false: it is
   *  no longer under that lease). */
  private async rebind(key: string, from: string): Promise<boolean> {
    const client = this.client!;
    const r = await client
      .if(key, 'Lease', '==', from)
      .then(client.put(key).value(this.me).lease(this.leaseId!))
      .commit();
    return r.succeeded;
  }

  /** With a new lease: keep each held claim that is still ours (by lease) or free; give up
   *  the others. */
  private async renewHeld(): Promise<void> {
    const client = this.client!;
    let lost = false;
    for (const id of [...this.held]) {
      const key = this.key('claim', id);
      const r = await client
        .if(key, 'Create', '==', 0)
        .then(client.put(key).value(this.me).lease(this.leaseId!))
        .else(client.get(key))
        .commit();
      if (r.succeeded) continue;
      const kv = r.responses[0]?.response_range?.kvs[0];
      const value = kv?.value.toString();
      if (kv && this.ownLeases.has(kv.lease)) {
        if (kv.lease === this.leaseId || (await this.rebind(key, kv.lease))) continue;
      }
      this.held.delete(id);
      lost = true;
      this.log.warn(
        { stream: id, holder: value },
        'another node took this stream meanwhile: stopping it here',
      );
    }
    if (lost) this.emit();
  }

  private schedule(): void {
    if (this.state === 'closed' || this.timer) return;
    if (this.busy) {
      this.again = true;
      return;
    }
    this.timer = setTimeout(() => {
      this.timer = undefined;
      void this.decide();
    }, SETTLE_MS);
    this.timer.unref();
  }

  /** Read the view, give up what is no longer wanted here, take what falls to this node. */
  private async decide(): Promise<void> {
    if (this.state === 'closed' || !this.client || !this.leaseId) return;
    this.busy = true;
    let changed = false;
    try {
      // Refused the name: try again (the other server's lease may have ended); claim nothing.
      if (this.joined || (await this.join())) changed = await this.claim(this.client, this.leaseId);
    } catch (e) {
      this.lastError = (e as Error).message;
      this.schedule();
    } finally {
      this.busy = false;
    }
    if (changed) this.emit();
    if (this.again) {
      this.again = false;
      this.schedule();
    }
  }

  /** One pass over the claims under this node's lease; whether what it runs changed. */
  private async claim(client: Etcd3, lease: string): Promise<boolean> {
    let changed = false;
    const all = await client.getAll().prefix(`${this.settings.prefix}/`).exec();
    const nodes = `${this.settings.prefix}/node/`;
    const claims = `${this.settings.prefix}/claim/`;
    this.alive = new Set();
    this.holders = new Map();
    this.claimLeases = new Map();
    for (const kv of all.kvs) {
      const k = kv.key.toString();
      if (k.startsWith(nodes)) this.alive.add(decodeURIComponent(k.slice(nodes.length)));
      else if (k.startsWith(claims)) {
        const id = decodeURIComponent(k.slice(claims.length));
        this.holders.set(id, kv.value.toString());
        this.claimLeases.set(id, kv.lease);
      }
    }
    // This node's name must still be under its lease (a key deleted by hand frees the name
    // for another server): checked on every pass, as the claims are.
    const me = all.kvs.find((kv) => kv.key.toString() === this.key('node', this.me));
    if (me?.lease !== lease) {
      this.joined = false;
      if (!(await this.join())) {
        this.dropHeld();
        return false;
      }
    }
    // Claims no longer wanted here (removed from the config, or this node no longer eligible).
    for (const id of [...this.held]) {
      if (this.wanted.get(id)?.includes(this.me)) continue;
      const key = this.key('claim', id);
      await client.if(key, 'Lease', '==', lease).then(client.delete().key(key)).commit();
      this.held.delete(id);
      this.holders.delete(id);
      changed = true;
    }
    // A claim under a lease of this process that it does not run (the answer to its claim
    // was lost): ours. One of this name under any other lease is another server's, even a
    // previous run of this one: it ends with that lease.
    for (const [id, from] of this.claimLeases) {
      if (!this.ownLeases.has(from) || this.held.has(id) || !this.wanted.get(id)?.includes(this.me))
        continue;
      if (from === lease || (await this.rebind(this.key('claim', id), from))) {
        this.held.add(id);
        changed = true;
      }
    }
    const joining =
      this.joinedAt === undefined || performance.now() - this.joinedAt < this.graceMs();
    for (const id of claimsToTake(this.me, this.wanted, this.holders, this.alive, joining)) {
      const key = this.key('claim', id);
      const r = await client
        .if(key, 'Create', '==', 0)
        .then(client.put(key).value(this.me).lease(lease))
        .commit();
      if (r.succeeded) {
        this.held.add(id);
        this.holders.set(id, this.me);
        changed = true;
        this.log.info({ stream: id }, 'claimed a movable stream');
      }
    }
    return changed;
  }
}
