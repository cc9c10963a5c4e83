// Placement: which node of a fleet runs which stream, adaptive group, archive storage and tuner
// adapter, computed from the one config every node reads (`cluster.nodes`, each stream's and
// group's `placement`). Pure and deterministic, so every node reaches the same answer from the
// same commit; a resource placed nowhere, or a reference that crosses nodes, is a config error.
// Design and rules: docs/fleet.md.
import { createHash } from 'node:crypto';
import { hostname } from 'node:os';
import { ServiceKey } from '../util/services.ts';
import { RECORD_DEFS, type RecordKind, recordKey } from './kinds.ts';
import { listAt } from './references.ts';
import { refsOf } from './refs.ts';
import { isPlainObject } from './schema.ts';
import type { ConfigDocument, ConfigIssue, DesiredState, Resource } from './types.ts';
import { resourceId } from './types.ts';

/** A node of the fleet as `cluster.nodes` declares it. */
export interface FleetNode {
  name: string;
  labels: Record<string, string>;
  /** Tuner adapters (ids) that are this node's hardware. */
  adapters: number[];
  /** Archive storages (ids) this node has; a storage no node lists is on every node. */
  storages: number[];
}

/** Where a resource runs: the nodes (one for a stream, group or adapter; those that list it for
 *  a storage), or every node (a storage no node lists). A movable stream also has the nodes it
 *  may move between (`eligible`); `nodes` is then where it runs without etcd. */
export type Where = { nodes: string[]; eligible?: string[] } | 'everywhere';

/** Who holds each movable stream now, as the fleet's etcd says (src/fleet/movable.ts). */
export interface MovableOwnership {
  /** Whether this node holds the claim on the movable resource `id` (`stream/7`). */
  owns(id: string): boolean;
  /** False while another live server has this node's name (docs/fleet.md, "One node per
   *  name"): nothing placed on the name runs here then, pinned or movable. */
  holdsName(): boolean;
  /** Runs when what this node holds changed; returns the function that stops it. */
  onChange(fn: () => void): () => void;
  /** The movable resources of the applied config and their eligible nodes; `node` is this
   *  server's name in the fleet. */
  want(node: string, movable: ReadonlyMap<string, string[]>): void;
}

/** Where the running server publishes its ownership (absent without etcd). */
export const MOVABLE_SERVICE = new ServiceKey<MovableOwnership>('movable-ownership');

/** Whether the config names etcd endpoints: movable streams then run only where claimed. */
export function etcdConfigured(desired: DesiredState): boolean {
  const etcd = desired.resources.get('cluster/cluster')?.spec.etcd;
  return isPlainObject(etcd) && Array.isArray((etcd as Rec).endpoints)
    ? ((etcd as Rec).endpoints as unknown[]).length > 0
    : false;
}

export interface Placement {
  /** The declared nodes; empty: no fleet, everything runs on the one server. */
  nodes: FleetNode[];
  /** By resource id (`stream/7`); resources of other kinds run everywhere. */
  of: Map<string, Where>;
  issues: ConfigIssue[];
}

type Rec = Record<string, unknown>;
/** Kinds that are placed; every other kind (settings, users, EPG) runs on every node. */
const PLACED: ReadonlySet<RecordKind> = new Set([
  'stream',
  'stream-adaptive',
  'dvb-adapter',
  'storage',
]);

function ids(v: unknown): number[] {
  return Array.isArray(v) ? v.filter((x): x is number => Number.isInteger(x)) : [];
}

/** The nodes `cluster.nodes` declares, in the order written. */
export function fleetNodes(doc: ConfigDocument): FleetNode[] {
  const cluster = doc.cluster;
  const nodes = isPlainObject(cluster) ? (cluster as Rec).nodes : undefined;
  if (!isPlainObject(nodes)) return [];
  return Object.entries(nodes as Rec).map(([name, v]) => {
    const n = isPlainObject(v) ? (v as Rec) : {};
    const labels = isPlainObject(n.labels) ? (n.labels as Record<string, string>) : {};
    return { name, labels, adapters: ids(n['dvb-adapter']), storages: ids(n['dvr-storage']) };
  });
}

/** Highest-random-weight choice: stable for a key, and adding a node moves only its share. */
export function pick(candidates: ReadonlyArray<{ name: string }>, key: string): string {
  let best = '';
  let bestScore = '';
  for (const n of candidates) {
    const score = createHash('sha256').update(`${n.name}\n${key}`).digest('hex');
    if (score > bestScore) [best, bestScore] = [n.name, score];
  }
  return best;
}

function describe(w: { nodes: string[] }): string {
  return `node${w.nodes.length > 1 ? 's' : ''} ${w.nodes.join(', ')}`;
}

/** Place every resource of `doc`. */
export function place(doc: ConfigDocument): Placement {
  const nodes = fleetNodes(doc);
  const of = new Map<string, Where>();
  const issues: ConfigIssue[] = [];
  const error = (pointer: string, rule: string, message: string) =>
    issues.push({ severity: 'error', pointer, rule, message });
  const byName = new Map(nodes.map((n) => [n.name, n]));
  const def = (kind: RecordKind) => RECORD_DEFS.find((d) => d.kind === kind)!;
  const records = (kind: RecordKind) =>
    listAt(doc, def(kind).path).map(({ rec, pointer }) => ({
      rec,
      pointer,
      id: resourceId({ kind, key: recordKey(def(kind), rec) }),
    }));
  const streams = records('stream');
  const groups = records('stream-adaptive');

  if (nodes.length === 0) {
    for (const { rec, pointer } of [...streams, ...groups]) {
      if (rec.placement !== undefined)
        error(
          `${pointer}/placement`,
          'placement',
          'placement needs cluster.nodes: no node is declared',
        );
      if (rec.movable === true)
        error(
          `${pointer}/movable`,
          'placement',
          'movable needs cluster.nodes: no node is declared',
        );
    }
    return { nodes, of, issues };
  }

  // Hardware and disks: from the node records.
  const listed = (
    kind: 'dvb-adapter' | 'storage',
    member: 'adapters' | 'storages',
    field: string,
  ) => {
    const exist = new Set(records(kind).map((r) => r.id));
    for (const n of nodes)
      n[member].forEach((id, i) => {
        if (!exist.has(`${kind}/${id}`))
          error(
            `/cluster/nodes/${n.name}/${field}/${i}`,
            'reference',
            `${field} ${id}: no such ${kind === 'storage' ? 'storage' : 'adapter'}`,
          );
      });
  };
  listed('dvb-adapter', 'adapters', 'dvb-adapter');
  listed('storage', 'storages', 'dvr-storage');
  for (const { rec, pointer, id } of records('dvb-adapter')) {
    const on = nodes.filter((n) => n.adapters.includes(rec.id as number));
    if (on.length === 1) of.set(id, { nodes: [on[0]!.name] });
    else
      error(
        pointer,
        'placement',
        on.length === 0
          ? `dvb-adapter ${String(rec.id)} is on no node: list it in cluster.nodes.<name>.dvb-adapter (a tuner belongs to one machine)`
          : `dvb-adapter ${String(rec.id)} is listed on nodes ${on.map((n) => n.name).join(' and ')}: a tuner belongs to one machine`,
      );
  }
  for (const { rec, id } of records('storage')) {
    const on = nodes.filter((n) => n.storages.includes(rec.id as number)).map((n) => n.name);
    of.set(id, on.length === 0 ? 'everywhere' : { nodes: on });
  }

  // Streams and groups: their own rule, else where what they read is, else spread.
  const all = new Map([...streams, ...groups].map((r) => [r.id, r]));
  const resolving = new Set<string>();
  const resolve = (id: string): Where | undefined => {
    const known = of.get(id);
    if (known) return known;
    const r = all.get(id);
    if (!r || resolving.has(id)) return undefined;
    resolving.add(id);
    const kind = id.startsWith('stream-adaptive/') ? 'stream-adaptive' : 'stream';
    let where: Where | undefined;
    const rule = r.rec.placement;
    const movable = kind === 'stream' && r.rec.movable === true;
    if (movable) {
      where = movablePlace(r, id);
    } else if (typeof rule === 'string') {
      if (byName.has(rule)) where = { nodes: [rule] };
      else
        error(
          `${r.pointer}/placement`,
          'placement',
          `placed on node ${rule}, which cluster.nodes does not declare`,
        );
    } else if (isPlainObject(rule)) {
      const want = Object.entries(rule as Rec);
      const eligible = nodes.filter((n) => want.every(([k, v]) => n.labels[k] === v));
      if (eligible.length > 0) where = { nodes: [pick(eligible, id)] };
      else
        error(
          `${r.pointer}/placement`,
          'placement',
          `placed nowhere: no node has the labels ${want.map(([k, v]) => `${k}=${String(v)}`).join(', ')}`,
        );
    } else {
      // A stream follows what it reads; else it goes to one of the nodes that have every
      // storage it records into.
      let candidates = nodes;
      for (const ref of refsOf(kind, r.rec, r.pointer)) {
        if (!PLACED.has(ref.rule.kind) || typeof ref.value !== 'number') continue;
        const target = resolve(resourceId({ kind: ref.rule.kind, key: String(ref.value) }));
        if (!target || target === 'everywhere') continue;
        if (ref.rule.kind === 'storage') {
          candidates = candidates.filter((n) => target.nodes.includes(n.name));
          continue;
        }
        where = target;
        break;
      }
      if (!where && candidates.length > 0) where = { nodes: [pick(candidates, id)] };
      else if (!where)
        error(r.pointer, 'placement', 'placed nowhere: no node has every storage it records into');
    }
    resolving.delete(id);
    if (where) of.set(id, where);
    return where;
  };
  /** A movable stream: any node its label selector (or every node that has its storages)
   *  admits; it may read nothing that runs on one node. */
  function movablePlace(r: { rec: Rec; pointer: string }, id: string): Where | undefined {
    const rule = r.rec.placement;
    if (typeof rule === 'string') {
      error(
        `${r.pointer}/movable`,
        'placement',
        `movable needs a placement that admits several nodes (labels, or none), not one node (${rule})`,
      );
      return undefined;
    }
    const want = isPlainObject(rule) ? Object.entries(rule as Rec) : [];
    let eligible = nodes.filter((n) => want.every(([k, v]) => n.labels[k] === v));
    let storages = false;
    for (const ref of refsOf('stream', r.rec, r.pointer)) {
      if (!PLACED.has(ref.rule.kind) || typeof ref.value !== 'number') continue;
      const target = resolve(resourceId({ kind: ref.rule.kind, key: String(ref.value) }));
      if (!target || target === 'everywhere') continue;
      if (ref.rule.kind === 'storage') {
        eligible = eligible.filter((n) => target.nodes.includes(n.name));
        storages = true;
        continue;
      }
      error(
        ref.pointer,
        'placement',
        `a movable stream cannot read ${ref.member} ${ref.value}, which runs on one node (carry it over udp, srt or HTTP instead)`,
      );
      return undefined;
    }
    if (eligible.length === 0) {
      error(
        `${r.pointer}/placement`,
        'placement',
        want.length > 0
          ? `placed nowhere: no node has the labels ${want.map(([k, v]) => `${k}=${String(v)}`).join(', ')}${storages ? ' and every storage it records into' : ''}`
          : 'placed nowhere: no node has every storage it records into',
      );
      return undefined;
    }
    return { nodes: [pick(eligible, id)], eligible: eligible.map((n) => n.name) };
  }
  for (const id of all.keys()) resolve(id);

  // What a stream or group reads must run on its node.
  for (const [id, r] of all) {
    const here = of.get(id);
    if (!here || here === 'everywhere') continue;
    const kind = id.startsWith('stream-adaptive/') ? 'stream-adaptive' : 'stream';
    for (const ref of refsOf(kind, r.rec, r.pointer)) {
      if (!PLACED.has(ref.rule.kind) || typeof ref.value !== 'number') continue;
      const there = of.get(resourceId({ kind: ref.rule.kind, key: String(ref.value) }));
      const node = here.nodes[0]!;
      if (there && there !== 'everywhere' && there.eligible && !here.eligible) {
        error(
          ref.pointer,
          'placement',
          `${ref.member} ${ref.value} is movable: it may run on any of nodes ${there.eligible.join(', ')}, so nothing may read it by reference (carry it over udp, srt or HTTP instead)`,
        );
        continue;
      }
      if (!there || there === 'everywhere' || there.nodes.includes(node)) continue;
      error(
        ref.pointer,
        'placement',
        `${ref.member} ${ref.value} is on ${describe(there)}, this ${kind === 'stream' ? 'stream' : 'group'} on node ${node}: a reference works only within one node (place them together, or carry the stream between nodes over udp, srt or HTTP)`,
      );
    }
  }
  return { nodes, of, issues };
}

/** Whether `node` runs the resource `id` under `p`. `owns`: with etcd, a movable stream runs
 *  where it is claimed (src/fleet/movable.ts), not where placement would put it. */
export function runsOn(
  p: Placement,
  id: string,
  node: string,
  owns?: (id: string) => boolean,
  holdsName = true,
): boolean {
  if (p.nodes.length === 0) return true;
  const where = p.of.get(id);
  // Settings and unplaced kinds run everywhere; a placed kind that found no node runs nowhere.
  if (where === undefined) return !PLACED.has(id.slice(0, id.indexOf('/')) as RecordKind);
  if (where === 'everywhere') return true;
  // The name is another server's: what is placed on it runs there, not here as well.
  if (!holdsName) return false;
  if (where.eligible && owns) return where.eligible.includes(node) && owns(id);
  return where.nodes.includes(node);
}

/** The part of `desired` that `node` runs: every setting, and what is placed on it (nothing
 *  placed on it while `holdsName` is false: another server has the name). */
export function shareOf(
  desired: DesiredState,
  p: Placement,
  node: string,
  owns?: (id: string) => boolean,
  holdsName = true,
): DesiredState {
  if (p.nodes.length === 0) return desired;
  const resources = new Map<string, Resource>();
  for (const [id, r] of desired.resources)
    if (runsOn(p, id, node, owns, holdsName)) resources.set(id, r);
  return { ...desired, resources };
}

/** The movable resources of `p` and the nodes each may run on. */
export function movables(p: Placement): Map<string, string[]> {
  const out = new Map<string, string[]>();
  for (const [id, w] of p.of) if (w !== 'everywhere' && w.eligible) out.set(id, w.eligible);
  return out;
}

/** This server's node: `serve --node` (or SLUICE_NODE), else `cluster.node-name`, else the
 *  host name — the name the cluster driver also gives peers. */
export function nodeName(desired: DesiredState, given: string | undefined): string {
  if (given) return given;
  const configured = desired.resources.get('cluster/cluster')?.spec['node-name'];
  return typeof configured === 'string' && configured !== '' ? configured : hostname();
}
