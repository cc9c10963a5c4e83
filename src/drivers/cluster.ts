// The `cluster` driver: publishes the server's cluster identity (domain, node name) under
// CLUSTER_SERVICE, where srt and ps1 inputs and outputs with peer-auth read it each time they
// dial or listen. An edit applies to the next connection; running ones are not cut.
import { hostname } from 'node:os';
import type { Resource } from '../config/types.ts';
import { CLUSTER_SERVICE, type ClusterIdentity } from '../engine/cluster.ts';
import type { Host, Instance, KindDriver, ResourceStatus, SpecOf } from '../reconciler/driver.ts';

type Spec = SpecOf<'cluster'>;

/** The identity of a `cluster` object: the node name falls back to the host name. */
export function clusterIdentity(spec: Spec): ClusterIdentity {
  return { domain: spec.domain, nodeName: spec['node-name'] || hostname() };
}

class ClusterInstance implements Instance<Spec> {
  private id: ClusterIdentity;

  constructor(
    res: Resource<Spec>,
    private readonly host: Host,
  ) {
    this.id = clusterIdentity(res.spec);
    host.services.set(CLUSTER_SERVICE, this.id);
  }

  async update(next: Resource<Spec>): Promise<void> {
    this.id = clusterIdentity(next.spec);
    this.host.services.set(CLUSTER_SERVICE, this.id);
  }

  async close(): Promise<void> {
    if (this.host.services.get(CLUSTER_SERVICE) === this.id) {
      this.host.services.delete(CLUSTER_SERVICE);
    }
  }

  status(): ResourceStatus {
    // The domain is the cluster's shared secret (src/engine/cluster.ts): never shown.
    return { state: 'active', inCluster: this.id.domain !== '', nodeName: this.id.nodeName };
  }
}

export const clusterDriver: KindDriver<'cluster'> = {
  kind: 'cluster',
  async create(res, host) {
    return new ClusterInstance(res, host);
  },
};
