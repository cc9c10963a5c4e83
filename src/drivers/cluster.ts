// The `cluster` driver: publishes the server's cluster identity (domain, node name) under
// CLUSTER_SERVICE, where srt and ps1 inputs and outputs with peer-auth read it each time they
// dial or listen. An edit applies to the next connection; running ones are not cut. With
// `etcd` endpoints it also runs this node's claims on movable streams (src/fleet/movable.ts)
// under MOVABLE_SERVICE, which the reconcile loop follows; a change of the etcd settings
// gives the claims up and joins again.
import { hostname } from 'node:os';
import { MOVABLE_SERVICE } from '../config/placement.ts';
import type { Resource } from '../config/types.ts';
import { CLUSTER_SERVICE, type ClusterIdentity } from '../engine/cluster.ts';
import { MovableClaims, type MovableSettings } from '../fleet/movable.ts';
import type { Host, Instance, KindDriver, ResourceStatus, SpecOf } from '../reconciler/driver.ts';

type Spec = SpecOf<'cluster'>;

/** The identity of a `cluster` object: the node name falls back to the host name. */
export function clusterIdentity(spec: Spec): ClusterIdentity {
  return { domain: spec.domain, nodeName: spec['node-name'] || hostname() };
}

/** The etcd settings of a `cluster` object; undefined without endpoints. */
function etcdSettings(spec: Spec): MovableSettings | undefined {
  const e = spec.etcd;
  const endpoints = e?.endpoints ?? [];
  if (endpoints.length === 0) return undefined;
  return {
    endpoints,
    leaseTtl: e?.['lease-ttl'] ?? 10,
    prefix: (e?.prefix ?? '/sluice').replace(/\/+$/, ''),
  };
}

class ClusterInstance implements Instance<Spec> {
  private id: ClusterIdentity;
  private claims?: MovableClaims;
  private etcd?: string;

  constructor(
    res: Resource<Spec>,
    private readonly host: Host,
  ) {
    this.id = clusterIdentity(res.spec);
    host.services.set(CLUSTER_SERVICE, this.id);
    this.follow(res.spec);
  }

  async update(next: Resource<Spec>): Promise<void> {
    this.id = clusterIdentity(next.spec);
    this.host.services.set(CLUSTER_SERVICE, this.id);
    await this.follow(next.spec);
  }

  /** Start, keep or restart the movable claims as the etcd settings say. */
  private async follow(spec: Spec): Promise<void> {
    const settings = etcdSettings(spec);
    const text = settings ? JSON.stringify(settings) : undefined;
    if (text === this.etcd) return;
    this.etcd = text;
    const old = this.claims;
    this.claims = settings ? new MovableClaims(settings, this.host.log) : undefined;
    if (this.claims) this.host.services.set(MOVABLE_SERVICE, this.claims);
    else this.host.services.delete(MOVABLE_SERVICE);
    await old?.close();
  }

  async close(): Promise<void> {
    if (this.host.services.get(CLUSTER_SERVICE) === this.id) {
      this.host.services.delete(CLUSTER_SERVICE);
    }
    if (this.claims && this.host.services.get(MOVABLE_SERVICE) === this.claims)
      this.host.services.delete(MOVABLE_SERVICE);
    await this.claims?.close();
  }

  status(): ResourceStatus {
    // The domain is the cluster's shared secret (src/engine/cluster.ts): never shown.
    const movable = this.claims?.status();
    // A duplicate node name is a config error: the resource says so, not only its details.
    const refused = movable?.state === 'refused';
    return {
      state: refused ? 'error' : 'active',
      ...(refused ? { message: movable.lastError } : {}),
      inCluster: this.id.domain !== '',
      nodeName: this.id.nodeName,
      ...(movable ? { movable } : {}),
    };
  }
}

export const clusterDriver: KindDriver<'cluster'> = {
  kind: 'cluster',
  async create(res, host) {
    return new ClusterInstance(res, host);
  },
};
