// The cluster this server belongs to (the `cluster` settings: domain and node name), as the
// inputs and outputs that authenticate to a peer of the same domain read it (`peer-auth` of
// srt and ps1). Published under CLUSTER_SERVICE by the `cluster` driver; docs/transports.md,
// "Cluster peers (peer-auth)".
import { createHmac } from 'node:crypto';
import { ServiceKey } from '../util/services.ts';

export interface ClusterIdentity {
  /** The cluster domain; '' = not in a cluster (peer-auth cannot work). */
  domain: string;
  /** This node's name in the cluster (never ''). */
  nodeName: string;
}

export const CLUSTER_SERVICE = new ServiceKey<ClusterIdentity>('cluster');

/** What peer-auth cannot do without. */
export const PEER_AUTH_NO_DOMAIN =
  'peer-auth is set but cluster.domain is empty: set the same cluster domain on both servers';

/**
 * The proof every node of a domain presents and accepts: HMAC-SHA256 keyed by the domain over
 * a fixed label, 32 characters of base64url. The domain is the shared secret: nodes that know
 * it admit each other, so it should be as hard to guess as a passphrase.
 */
export function peerProof(domain: string): string {
  return createHmac('sha256', domain)
    .update('sluice cluster peer-auth v1')
    .digest('base64url')
    .slice(0, 32);
}
