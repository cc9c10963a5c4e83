// The `cluster` driver publishes the identity peer-auth reads; the node name falls back to the
// host name; the domain (the cluster's shared secret) never shows in status.
import { hostname } from 'node:os';
import t from 'tap';
import { clusterDriver } from '../../src/drivers/cluster.ts';
import { CLUSTER_SERVICE } from '../../src/engine/cluster.ts';
import { silentLogger } from '../../src/log.ts';
import { createHost } from '../../src/reconciler/host.ts';
import { ManualClock } from '../../src/util/clock.ts';
import { applied } from '../helpers/desired.ts';

const cluster = (domain: string, node: string) =>
  applied('cluster', 'cluster', { domain, 'node-name': node });

t.test('published, updated in place, withdrawn on close', async (t) => {
  const host = createHost({ log: silentLogger, clock: new ManualClock(0), dataDir: '/x' });
  const inst = await clusterDriver.create(cluster('k7-secret', 'origin-1'), host);
  t.same(host.services.get(CLUSTER_SERVICE), { domain: 'k7-secret', nodeName: 'origin-1' });
  t.same(inst.status(), { state: 'active', inCluster: true, nodeName: 'origin-1' });
  t.notMatch(JSON.stringify(inst.status()), /k7-secret/, 'the domain is not in status');

  await inst.update(cluster('k8-secret', ''), []);
  t.same(
    host.services.get(CLUSTER_SERVICE),
    { domain: 'k8-secret', nodeName: hostname() },
    'an empty node-name is the host name',
  );

  await inst.close();
  t.equal(host.services.get(CLUSTER_SERVICE), undefined);
});
