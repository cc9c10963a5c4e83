// One node name, one node: a node registers `{prefix}/node/{name}` under its lease only while
// no live lease has that name, so a second server started with the same --node is refused
// (docs/fleet.md, "One node per name") instead of taking the first one's streams over.
import { hostname } from 'node:os';
import type { Etcd3 } from 'etcd3';

/** What a node writes under its name: which server it is, for the message of a duplicate. */
export interface NodeHolder {
  /** The holder's lease (hex, as `/data/status` shows leases). */
  lease: string;
  pid?: number;
  host?: string;
  /** When that server joined (ISO 8601). */
  since?: string;
}

/** An etcd lease id (decimal, as etcd3 gives it) in the hex form status and logs show. */
export function leaseHex(id: string): string {
  return BigInt(id).toString(16);
}

/** This server, as its node key's value says it. */
export function nodeValue(since: string): string {
  return JSON.stringify({ pid: process.pid, host: hostname(), since });
}

/** The holder a node key names; a value that is not ours to read (an older node wrote the
 *  time in ms) still gives the lease and, when it is a number, the start time. */
export function parseNodeHolder(value: string, lease: string): NodeHolder {
  const holder: NodeHolder = { lease: leaseHex(lease) };
  try {
    const v = JSON.parse(value) as unknown;
    if (typeof v === 'number') return { ...holder, since: new Date(v).toISOString() };
    if (v && typeof v === 'object') {
      const o = v as Record<string, unknown>;
      if (typeof o['pid'] === 'number') holder.pid = o['pid'];
      if (typeof o['host'] === 'string') holder.host = o['host'];
      if (typeof o['since'] === 'string') holder.since = o['since'];
    }
  } catch {
    // Not JSON: the lease alone names the holder.
  }
  return holder;
}

/** The refusal, for the log and `/data/status`: who has the name and what to do. */
export function duplicateMessage(node: string, h: NodeHolder, leaseTtl: number): string {
  const who = [
    `lease ${h.lease}`,
    ...(h.pid !== undefined ? [`pid ${h.pid}`] : []),
    ...(h.host ? [`host ${h.host}`] : []),
    ...(h.since ? [`since ${h.since}`] : []),
  ].join(', ');
  return (
    `node name ${node} is held by another live server (${who}): two servers with one node name ` +
    'would run the same streams. Give each server a node name of its own (--node, SLUICE_NODE, ' +
    `cluster.node-name). This server claims no movable stream until that lease ends (within ` +
    `lease-ttl ${leaseTtl} s of the other server stopping; a server restarted after kill -9 ` +
    'waits out its previous run this way)'
  );
}

export type JoinResult = { joined: true } | { joined: false; heldBy?: NodeHolder };

/**
 * Register `key` under `lease` if no live lease has it. A key under an earlier lease of this
 * process (`ownLeases`: etcd was out of reach and the lease was replaced) moves to the new one.
 * `heldBy` is absent when the key changed under the attempt: try again.
 */
export async function registerNode(
  client: Etcd3,
  key: string,
  value: string,
  lease: string,
  ownLeases: ReadonlySet<string>,
): Promise<JoinResult> {
  const r = await client
    .if(key, 'Create', '==', 0)
    .then(client.put(key).value(value).lease(lease))
    .else(client.get(key))
    .commit();
  if (r.succeeded) return { joined: true };
  const kv = r.responses[0]?.response_range?.kvs[0];
  if (!kv) return { joined: false };
  if (kv.lease === lease) return { joined: true };
  if (!ownLeases.has(kv.lease)) {
    return { joined: false, heldBy: parseNodeHolder(kv.value.toString(), kv.lease) };
  }
  const moved = await client
    .if(key, 'Mod', '==', kv.mod_revision)
    .then(client.put(key).value(value).lease(lease))
    .commit();
  return { joined: moved.succeeded };
}
