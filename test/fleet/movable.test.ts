// Movable streams with a real etcd (Debian's etcd-server) on loopback (issue 24's failover
// acceptance): two nodes share four movable streams, each pushing UDP to its own port here;
// kill -9 one node and its streams play from the other within the lease TTL plus start-up;
// start it again and nothing moves back (sticky). Every datagram's source is recorded, so the
// test sees it if two nodes ever send the same stream to the same destination at once.
import t from 'tap';
import { startEtcd } from '../helpers/etcd.ts';
import { listenUdp, movableConfig } from '../helpers/fleet.ts';
import { freePort, type ServerHandle, startServer, waitFor } from '../helpers/server.ts';

const TTL = 4;
/** A dead node's streams play elsewhere within the TTL plus this (claim, start, first packet). */
const START_ALLOWANCE_MS = 6000;

interface Movable {
  state: string;
  held: string[];
  holders: Record<string, string>;
  alive: string[];
}

async function movable(srv: ServerHandle): Promise<Movable | undefined> {
  const r = await fetch(`${srv.url}/data/status`).catch(() => undefined);
  if (!r?.ok) return undefined;
  const st = (await r.json()) as {
    resources: { kind: string; status?: { movable?: Movable } }[];
  };
  return st.resources.find((x) => x.kind === 'cluster')?.status?.movable;
}

/** The sources a port heard from since `since`, in order of first datagram. */
function sources(list: [number, number][], since = 0): number[] {
  const out: number[] = [];
  for (const [at, src] of list) if (at >= since && !out.includes(src)) out.push(src);
  return out;
}

/** True when two sources alternate (one came back after another took over): a double run. */
function interleaved(list: [number, number][]): boolean {
  const done = new Set<number>();
  let cur: number | undefined;
  for (const [, src] of list) {
    if (src === cur) continue;
    if (done.has(src)) return true;
    if (cur !== undefined) done.add(cur);
    cur = src;
  }
  return false;
}

t.test('kill -9 a node: its movable streams play from the other; no double run', async (t) => {
  const etcd = await startEtcd(t);
  const ports = await Promise.all(Array.from({ length: 4 }, () => freePort()));
  const seen = await listenUdp(t, ports);
  const config = movableConfig(etcd.url, ports, { leaseTtl: TTL, prefix: '/test' });
  const start = (node: string) =>
    startServer(t, { config, args: ['--node', node], env: { SLUICE_LOG_LEVEL: 'info' } });
  // Started together: each takes its own share first (the join grace), so they spread.
  let [a, b] = await Promise.all([start('a'), start('b')]);

  // Every stream claimed by exactly one node, and playing.
  const holders = await waitFor(
    'every stream claimed',
    async () => {
      const [ma, mb] = [await movable(a), await movable(b)];
      if (ma?.state !== 'connected' || mb?.state !== 'connected') return undefined;
      const held = [...ma.held.map((id) => [id, 'a']), ...mb.held.map((id) => [id, 'b'])];
      return held.length === 4 ? new Map(held as [string, string][]) : undefined;
    },
    30_000,
  );
  t.equal(new Set(holders.keys()).size, 4, 'four claims, none twice');
  await waitFor(
    'every stream playing',
    () => (ports.every((p) => seen.get(p)!.length > 0) ? true : undefined),
    30_000,
  );
  const on = (n: string) => ports.filter((_p, i) => holders.get(`stream/${i + 1}`) === n);
  t.ok(
    on('a').length > 0 && on('b').length > 0,
    `spread (a ${on('a').length}, b ${on('b').length})`,
  );
  // The node with more streams is the one killed (below called a).
  if (on('b').length > on('a').length) [a, b] = [b, a];
  const victim = on('b').length > on('a').length ? 'b' : 'a';
  const onA = on(victim);

  // kill -9 a: b takes its streams once a's lease has expired.
  const before = new Map(onA.map((p) => [p, sources(seen.get(p)!)[0]!]));
  const killedAt = Date.now();
  await a.kill9();
  const moved = await waitFor(
    "a's streams playing from b",
    () => {
      const at: number[] = [];
      for (const p of onA) {
        const next = seen.get(p)!.find(([when, src]) => when > killedAt && src !== before.get(p));
        if (!next) return undefined;
        at.push(next[0] - killedAt);
      }
      return at;
    },
    TTL * 1000 + START_ALLOWANCE_MS + 10_000,
  );
  const worst = Math.max(...moved);
  t.ok(
    worst <= TTL * 1000 + START_ALLOWANCE_MS,
    `playing from b ${moved.join(', ')} ms after the kill (TTL ${TTL} s + ${START_ALLOWANCE_MS} ms)`,
  );
  const mb = await movable(b);
  t.same(mb?.held.sort(), ['stream/1', 'stream/2', 'stream/3', 'stream/4'], 'b holds all four');

  // a comes back: it claims nothing (sticky) and sends nothing.
  const back = await start(victim);
  const rejoined = Date.now();
  const ma = await waitFor(
    'a connected again',
    async () => {
      const m = await movable(back);
      return m?.state === 'connected' && m.alive.includes(victim) ? m : undefined;
    },
    30_000,
  );
  t.same(ma.held, [], 'a holds nothing after its restart');
  // Watch two lease periods, then check every destination's whole history.
  const quietUntil = Date.now() + 2 * TTL * 1000;
  await waitFor('two lease periods', () => (Date.now() >= quietUntil ? true : undefined), 10_000);
  for (const p of ports) {
    const list = seen.get(p)!;
    t.same(sources(list, rejoined).length, 1, `port ${p}: one source since a came back`);
    t.notOk(interleaved(list), `port ${p}: never two senders at once`);
  }
  t.same((await movable(b))?.held.length, 4, 'b still holds all four');
  await back.stop();
  await b.stop();
});

t.test(
  'etcd down: the node keeps what it runs, says so, and renews its claims after',
  async (t) => {
    const etcd = await startEtcd(t);
    const ports = await Promise.all(Array.from({ length: 2 }, () => freePort()));
    const seen = await listenUdp(t, ports);
    const config = {
      cluster: {
        nodes: { a: { labels: { role: 'origin' } }, b: { labels: { role: 'origin' } } },
        etcd: { endpoints: [etcd.url], 'lease-ttl': 2, prefix: '/down' },
      },
      stream: ports.map((port, i) => ({
        id: i + 1,
        'stream-name': `d${i + 1}`,
        pause: false,
        movable: true,
        input: [
          { type: 'test', width: 160, height: 90, 'video-bitrate': 100, 'enable-overlay': false },
        ],
        output: [{ type: 'udp', address: '127.0.0.1', port }],
      })),
    };
    const a = await startServer(t, { config, args: ['--node', 'a'] });
    await waitFor(
      'both streams held and playing',
      async () => {
        const m = await movable(a);
        return m?.held.length === 2 && ports.every((p) => seen.get(p)!.length > 0)
          ? true
          : undefined;
      },
      30_000,
    );
    await etcd.kill();
    const down = await waitFor(
      'the node reports etcd unreachable',
      async () => {
        const m = await movable(a);
        return m?.state === 'unreachable' ? m : undefined;
      },
      20_000,
    );
    t.same(down.held.length, 2, 'still holding both');
    const counted = ports.map((p) => seen.get(p)!.length);
    await waitFor(
      'still sending while etcd is down',
      () => (ports.every((p, i) => seen.get(p)!.length > counted[i]! + 20) ? true : undefined),
      10_000,
    );
    await etcd.restart();
    const back = await waitFor(
      'connected again',
      async () => {
        const m = await movable(a);
        return m?.state === 'connected' ? m : undefined;
      },
      30_000,
    );
    t.same(back.held.length, 2, 'its claims renewed under the new lease');
    for (const p of ports)
      t.same(sources(seen.get(p)!).length, 1, `port ${p}: one sender throughout`);
    await a.stop();
  },
);
