// One node name, one node (issue 35, item 8), with a real etcd on loopback: a second server
// started with a node name in use is refused it — status error naming the first one's lease
// and pid, no claim taken, no datagram sent — until the first dies and its lease ends; then it
// joins and runs the streams. And claims are trusted by lease, never by the name they carry.
import { Etcd3 } from 'etcd3';
import t from 'tap';
import { MovableClaims } from '../../src/fleet/movable.ts';
import { silentLogger } from '../../src/log.ts';
import { startEtcd } from '../helpers/etcd.ts';
import { listenUdp, movableConfig } from '../helpers/fleet.ts';
import { freePort, type ServerHandle, startServer, waitFor } from '../helpers/server.ts';

const TTL = 4;
/** The second server runs the streams within the TTL plus this (join, claim, start, packet). */
const START_ALLOWANCE_MS = 8000;

interface ClusterStatus {
  state: string;
  message?: string;
  movable?: { state: string; lease?: string; held: string[]; refusedBy?: { lease: string } };
}

async function cluster(srv: ServerHandle): Promise<ClusterStatus | undefined> {
  const r = await fetch(`${srv.url}/data/status`).catch(() => undefined);
  if (!r?.ok) return undefined;
  const st = (await r.json()) as { resources: { kind: string; status?: ClusterStatus }[] };
  return st.resources.find((x) => x.kind === 'cluster')?.status;
}

t.test('a duplicate node name is refused while the first holds its lease', async (t) => {
  const etcd = await startEtcd(t);
  const ports = await Promise.all(Array.from({ length: 2 }, () => freePort()));
  const pinnedPort = await freePort();
  const seen = await listenUdp(t, [...ports, pinnedPort]);
  const config = movableConfig(etcd.url, ports, { leaseTtl: TTL, prefix: '/dup' });
  // A stream placed on the name itself (not movable): it must not run on both servers either.
  const pinned = structuredClone((config.stream as Record<string, unknown>[])[0]!);
  delete pinned['movable'];
  Object.assign(pinned, { id: 3, 'stream-name': 'pinned', placement: 'a' });
  pinned['output'] = [{ type: 'udp', address: '127.0.0.1', port: pinnedPort }];
  (config.stream as Record<string, unknown>[]).push(pinned);
  const first = await startServer(t, { config, args: ['--node', 'a'] });
  const held = await waitFor(
    'the first server holding and playing both streams',
    async () => {
      const c = await cluster(first);
      const playing = [...ports, pinnedPort].every((p) => seen.get(p)!.length > 0);
      return c?.movable?.held.length === 2 && playing ? c.movable : undefined;
    },
    30_000,
  );
  const firstSource = new Map([...ports, pinnedPort].map((p) => [p, seen.get(p)![0]![1]]));

  const second = await startServer(t, { config, args: ['--node', 'a'] });
  const refused = await waitFor(
    'the second server refused the name',
    async () => {
      const c = await cluster(second);
      return c?.movable?.state === 'refused' ? c : undefined;
    },
    30_000,
  );
  t.equal(refused.state, 'error', 'the cluster resource is in error');
  t.match(refused.message, 'node name a is held by another live server');
  t.match(refused.message, `lease ${held.lease}`, "names the first one's lease");
  t.match(refused.message, `pid ${first.proc.pid}`, 'and its pid');
  t.match(refused.message, /since \d{4}-\d\d-\d\dT/, 'and when it started');
  t.match(refused.message, '--node', 'says what to do');
  t.equal(refused.movable?.refusedBy?.lease, held.lease);
  t.same(refused.movable?.held, [], 'the second server holds nothing');
  t.match(second.output(), 'is held by another live server', 'and says so in its log');

  // Over a whole lease period (two resync passes of the second server) after it knew it was
  // refused, only the first sends: the movable streams and the pinned one.
  const from = Date.now();
  const until = from + TTL * 1000;
  await waitFor('a lease period', () => (Date.now() >= until ? true : undefined), 2 * TTL * 1000);
  const pinnedFromSecond = seen
    .get(pinnedPort)!
    .filter(([when, src]) => when >= from && src !== firstSource.get(pinnedPort));
  t.same(pinnedFromSecond.length, 0, 'the stream pinned to the name is not sent by the second');
  for (const p of ports) {
    const sources = new Set(seen.get(p)!.map(([, src]) => src));
    t.same([...sources], [firstSource.get(p)], `port ${p}: the first server alone sends`);
  }
  t.same((await cluster(second))?.movable?.held, [], 'still nothing held by the second');

  // The first dies: its lease ends after the TTL, then the second takes the name and the streams.
  const killedAt = Date.now();
  await first.kill9();
  const joined = await waitFor(
    'the second server joined and holding both',
    async () => {
      const c = await cluster(second);
      return c?.movable?.state === 'connected' && c.movable.held.length === 2 ? c : undefined;
    },
    TTL * 1000 + START_ALLOWANCE_MS + 10_000,
  );
  t.equal(joined.state, 'active', 'the cluster resource is fine again');
  t.notOk(joined.movable?.refusedBy, 'no longer refused');
  const moved = await waitFor(
    'all three streams playing from the second server',
    () => {
      const at = [...ports, pinnedPort].map((p) =>
        seen.get(p)!.find(([when, src]) => when > killedAt && src !== firstSource.get(p)),
      );
      return at.every((x) => x !== undefined) ? at.map((x) => x![0] - killedAt) : undefined;
    },
    TTL * 1000 + START_ALLOWANCE_MS + 10_000,
  );
  t.ok(
    Math.max(...moved) <= TTL * 1000 + START_ALLOWANCE_MS,
    `playing from the second ${moved.join(', ')} ms after the kill`,
  );
  await second.stop();
});

t.test('a claim carrying this node name under a lease not its own is not its own', async (t) => {
  const etcd = await startEtcd(t);
  const client = new Etcd3({ hosts: [etcd.url] });
  t.teardown(() => client.close());
  // A claim in this node's name under another lease: what a previous run left, or another
  // server with this name. Kept alive by the test until it revokes it.
  const other = client.lease(TTL);
  await other.grant();
  await other.put('/own/claim/stream%2F1').value('a');
  const claims = new MovableClaims(
    { endpoints: [etcd.url], leaseTtl: TTL, prefix: '/own' },
    silentLogger,
  );
  t.teardown(() => claims.close());
  claims.want('a', new Map([['stream/1', ['a']]]));
  await waitFor('the node connected', () => claims.status().state === 'connected' || undefined);
  // A key put now is read by a pass that starts after every earlier one ended (passes run one
  // at a time): once it shows, the passes that saw the claim have decided on it.
  await other.put('/own/node/marker').value('{}');
  const seenIt = await waitFor(
    'a pass after the claim was read',
    () => {
      const s = claims.status();
      return s.alive.includes('marker') ? s : undefined;
    },
    20_000,
  );
  t.equal(seenIt.holders['stream/1'], 'a', 'the claim carries this node name');
  t.same(seenIt.held, [], 'not taken as its own by name');
  t.notOk(claims.owns('stream/1'), 'does not run it');

  // The other lease ends: the claim is free, and the node takes it under its own lease.
  await other.revoke();
  const took = await waitFor(
    'the node claims it under its own lease',
    () => (claims.owns('stream/1') ? claims.status() : undefined),
    20_000,
  );
  const kv = await client.get('/own/claim/stream%2F1').exec();
  t.equal(
    BigInt(kv.kvs[0]!.lease).toString(16),
    took.lease,
    'the claim is under the node’s own lease',
  );
});
