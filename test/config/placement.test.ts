// Placement of streams, groups, storages and adapters on the nodes of a fleet
// (src/config/placement.ts, docs/fleet.md): node names and label selectors, spreading by a
// stable hash, following what a stream reads, storages per node, adapters as one node's
// hardware, and the config errors for what is placed nowhere or reads across nodes.
import t from 'tap';
import { movables, place, runsOn, shareOf } from '../../src/config/placement.ts';
import { loadConfigText } from '../../src/config/store.ts';
import { ConfigError } from '../../src/config/types.ts';
import { claimsToTake } from '../../src/fleet/movable.ts';

const nodes = {
  'ams-1': { labels: { site: 'ams', role: 'origin' } },
  'ams-2': { labels: { site: 'ams', role: 'edge' } },
  'fra-1': { labels: { site: 'fra', role: 'origin' } },
};
/** The nodes with tuner adapter 1 on ams-1 and storage 2 on fra-1. */
const withHardware = {
  ...nodes,
  'ams-1': { ...nodes['ams-1'], 'dvb-adapter': [1] },
  'fra-1': { ...nodes['fra-1'], 'dvr-storage': [2] },
};
const udp = (port: number) => ({ type: 'udp', port });
const stream = (id: number, more: Record<string, unknown> = {}) => ({
  id,
  'stream-name': `s${id}`,
  input: [udp(5000 + id)],
  ...more,
});
const storage = (id: number) => ({ id, name: `disk${id}`, 'dir-path': `/srv/d${id}` });

/** The node each resource id runs on (or `*`). */
function where(doc: Record<string, unknown>): Record<string, string> {
  const p = place(doc);
  return Object.fromEntries(
    [...p.of].map(([id, w]) => [id, w === 'everywhere' ? '*' : w.nodes.join(',')]),
  );
}

t.test('no fleet: everything runs here; a placement is an error', async (t) => {
  const doc = { stream: [stream(1), stream(2, { placement: 'ams-1' })] };
  const p = place(doc);
  t.equal(p.nodes.length, 0);
  t.ok(runsOn(p, 'stream/1', 'anything'));
  t.match(p.issues, [{ pointer: '/stream/1/placement', message: /needs cluster.nodes/ }]);
});

t.test('a node name, a label selector, and a stable spread', async (t) => {
  const doc = {
    cluster: { nodes },
    stream: [
      stream(1, { placement: 'ams-2' }),
      stream(2, { placement: { site: 'fra' } }),
      stream(3, { placement: { site: 'ams', role: 'origin' } }),
      ...Array.from({ length: 30 }, (_, i) => stream(100 + i)),
    ],
  };
  const w = where(doc);
  t.equal(w['stream/1'], 'ams-2');
  t.equal(w['stream/2'], 'fra-1');
  t.equal(w['stream/3'], 'ams-1');
  const spread = Array.from({ length: 30 }, (_, i) => w[`stream/${100 + i}`]);
  for (const n of Object.keys(nodes))
    t.ok(spread.includes(n), `the unplaced streams spread over ${n} too`);
  t.same(where(doc), w, 'the same config places the same way');
  // A fourth node takes some streams; none moves between the first three.
  const more = where({ ...doc, cluster: { nodes: { ...nodes, 'ber-1': { labels: {} } } } });
  let moved = 0;
  for (let i = 0; i < 30; i++) {
    const before = w[`stream/${100 + i}`];
    const after = more[`stream/${100 + i}`];
    if (after !== before) {
      moved++;
      t.equal(after, 'ber-1', `stream ${100 + i} moves only to the new node`);
    }
  }
  t.ok(moved > 0 && moved < 20, `${moved} of 30 moved to the new node`);
  t.same(place(doc).issues, []);
});

t.test('placed nowhere: unknown node, labels no node has', async (t) => {
  const p = place({
    cluster: { nodes },
    stream: [stream(1, { placement: 'nope' }), stream(2, { placement: { site: 'lon' } })],
  });
  t.match(p.issues, [
    { pointer: '/stream/0/placement', message: /node nope, which cluster.nodes does not declare/ },
    { pointer: '/stream/1/placement', message: /placed nowhere: no node has the labels site=lon/ },
  ]);
  t.notOk(runsOn(p, 'stream/1', 'ams-1'), 'a stream placed nowhere runs nowhere');
});

t.test('a stream follows what it reads; a group its members', async (t) => {
  const doc = {
    cluster: { nodes: { ...nodes, 'ams-1': { ...nodes['ams-1'], 'dvb-adapter': [1] } } },
    stream: [
      stream(1, { mpts: true, placement: 'fra-1' }),
      stream(2, { input: [{ type: 'demuxer', 'mpts-id': 1, pnr: 101 }] }),
      stream(3, { input: [{ type: 'dvb', 'adapter-id': 1 }] }),
      stream(4, { placement: 'ams-2' }),
      stream(5, { placement: 'ams-2' }),
    ],
    'stream-adaptive': [{ id: 1, 'stream-name': 'abr', streams: [4, 5] }],
    'dvb-adapter': [{ id: 1, name: 'tuner', type: 5, 'lnb-polarization': 0 }],
  };
  const p = place(doc);
  t.same(p.issues, []);
  const w = where(doc);
  t.equal(w['stream/2'], 'fra-1', 'the demuxer runs where its multiplex does');
  t.equal(w['stream/3'], 'ams-1', 'a dvb input runs where its adapter is');
  t.equal(w['dvb-adapter/1'], 'ams-1');
  t.equal(w['stream-adaptive/1'], 'ams-2', 'the group runs where its members do');
});

t.test('references across nodes are errors that say why', async (t) => {
  const p = place({
    cluster: { nodes },
    stream: [
      stream(1, { mpts: true, placement: 'fra-1' }),
      stream(2, { placement: 'ams-1', input: [{ type: 'demuxer', 'mpts-id': 1, pnr: 101 }] }),
      stream(4, { placement: 'ams-1' }),
      stream(5, { placement: 'ams-2' }),
    ],
    'stream-adaptive': [{ id: 1, 'stream-name': 'abr', streams: [4, 5] }],
  });
  t.match(p.issues, [
    {
      pointer: '/stream/1/input/0/mpts-id',
      message:
        /mpts-id 1 is on node fra-1, this stream on node ams-1: a reference works only within one node/,
    },
    {
      pointer: '/stream-adaptive/0/streams/1',
      message: /5 is on node ams-2, this group on node ams-1/,
    },
  ]);
});

t.test('storages: on every node unless listed; adapters: exactly one node', async (t) => {
  const doc = {
    cluster: { nodes: withHardware },
    'dvr-storage-list': { storage: [storage(1), storage(2)] },
    stream: [
      stream(1, { 'dvr-storage': 1, placement: 'ams-2' }),
      stream(2, { 'dvr-storage': 2 }),
      stream(3, { 'dvr-storage': 2, placement: 'ams-1' }),
    ],
    'dvb-adapter': [
      { id: 1, name: 'tuner', type: 5, 'lnb-polarization': 0 },
      { id: 2, name: 'loose', type: 5, 'lnb-polarization': 0 },
    ],
  };
  const p = place(doc);
  const w = where(doc);
  t.equal(w['storage/1'], '*');
  t.equal(w['storage/2'], 'fra-1');
  t.equal(w['stream/2'], 'fra-1', 'an unplaced stream goes where its storage is');
  t.match(p.issues, [
    { pointer: '/dvb-adapter/1', message: /dvb-adapter 2 is on no node/ },
    {
      pointer: '/stream/2/dvr-storage',
      message: /dvr-storage 2 is on node fra-1, this stream on node ams-1/,
    },
  ]);
  const twice = place({
    cluster: { nodes: { a: { 'dvb-adapter': [1] }, b: { 'dvb-adapter': [1, 9] } } },
    'dvb-adapter': [{ id: 1, name: 'tuner', type: 5, 'lnb-polarization': 0 }],
  });
  t.match(twice.issues, [
    { pointer: '/cluster/nodes/b/dvb-adapter/1', message: /dvb-adapter 9: no such adapter/ },
    { pointer: '/dvb-adapter/0', message: /listed on nodes a and b/ },
  ]);
});

t.test("a node's share: every setting, and what is placed on it", async (t) => {
  const text = JSON.stringify({
    cluster: { nodes },
    'http-server': { port: 8080 },
    user: [{ login: 'admin', password: 'x', role: 'admin' }],
    'dvr-storage-list': { storage: [storage(1)] },
    stream: [stream(1, { placement: 'ams-1' }), stream(2, { placement: 'fra-1' })],
  });
  const { desired } = loadConfigText(text);
  const ids = (node: string) => [...shareOf(desired, desired.placement!, node).resources.keys()];
  t.ok(ids('ams-1').includes('stream/1'));
  t.notOk(ids('ams-1').includes('stream/2'));
  t.ok(ids('fra-1').includes('stream/2'));
  for (const node of ['ams-1', 'fra-1', 'ams-2'])
    for (const id of ['http-server/http-server', 'user/admin', 'storage/1', 'cluster/cluster'])
      t.ok(ids(node).includes(id), `${node} runs ${id}`);
  t.same(
    ids('nowhere').filter((id) => id.startsWith('stream/')),
    [],
    'an undeclared node runs no stream',
  );
});

t.test('placement errors refuse the config with line and column', async (t) => {
  const text = `{
  "cluster": { "nodes": { "a": { "labels": { "site": "x" } } } },
  "stream": [ { "id": 1, "stream-name": "s", "placement": { "site": "y" } } ]
}`;
  const err = t.throws(() => loadConfigText(text)) as ConfigError;
  t.ok(err instanceof ConfigError);
  t.match(err.issues, [{ pointer: '/stream/0/placement', line: 3, rule: 'placement' }]);
});

t.test('movable streams: eligible nodes, where they run without etcd, and with it', async (t) => {
  const doc = {
    cluster: { nodes },
    stream: [
      stream(1, { movable: true, placement: { role: 'origin' } }),
      stream(2, { movable: true }),
      stream(3, { placement: 'ams-2' }),
    ],
  };
  const p = place(doc);
  t.same(p.issues, []);
  t.same(
    movables(p),
    new Map([
      ['stream/1', ['ams-1', 'fra-1']],
      ['stream/2', ['ams-1', 'ams-2', 'fra-1']],
    ]),
  );
  const w1 = p.of.get('stream/1') as { nodes: string[] };
  t.ok(['ams-1', 'fra-1'].includes(w1.nodes[0]!), 'without etcd: one of them, by the stable hash');
  t.ok(runsOn(p, 'stream/1', w1.nodes[0]!), 'and it runs there');
  // With etcd the claim decides: only an eligible node that holds it runs it.
  const held = new Set(['stream/1']);
  const owns = (id: string) => held.has(id);
  t.ok(runsOn(p, 'stream/1', 'fra-1', owns));
  t.notOk(runsOn(p, 'stream/1', 'ams-2', owns), 'a node it may not run on, even if it held it');
  t.notOk(runsOn(p, 'stream/2', 'ams-1', owns), 'not held: not here');
  t.ok(runsOn(p, 'stream/3', 'ams-2', owns), 'other streams as placed');
});

t.test('movable: what cannot work is an error that says why', async (t) => {
  const p = place({
    cluster: { nodes: { ...nodes, 'ams-1': { ...nodes['ams-1'], 'dvb-adapter': [1] } } },
    stream: [
      stream(1, { movable: true, placement: 'ams-1' }),
      stream(2, { movable: true, input: [{ type: 'dvb', 'adapter-id': 1 }] }),
      stream(3, { movable: true, placement: { site: 'lon' } }),
      stream(4, { movable: true, placement: { role: 'origin' } }),
      stream(5, { placement: 'ams-1', input: [{ type: 'transcoder', 'decoder-id': 4 }] }),
    ],
    'dvb-adapter': [{ id: 1, name: 'tuner', type: 5, 'lnb-polarization': 0 }],
  });
  t.match(p.issues, [
    {
      pointer: '/stream/0/movable',
      message: /movable needs a placement that admits several nodes/,
    },
    {
      pointer: '/stream/1/input/0/adapter-id',
      message: /a movable stream cannot read adapter-id 1/,
    },
    { pointer: '/stream/2/placement', message: /placed nowhere: no node has the labels site=lon/ },
    { pointer: '/stream/4/input/0/decoder-id', message: /decoder-id 4 is movable/ },
  ]);
  const none = place({ stream: [stream(1, { movable: true })] });
  t.match(none.issues, [{ pointer: '/stream/0/movable', message: /movable needs cluster.nodes/ }]);
});

t.test(
  'claimsToTake: free, eligible here, and the stable choice among the live nodes',
  async (t) => {
    const want = new Map([
      ['stream/1', ['a', 'b']],
      ['stream/2', ['a', 'b']],
      ['stream/3', ['b']],
    ]);
    const both = new Set(['a', 'b']);
    const a = claimsToTake('a', want, new Map(), both);
    const b = claimsToTake('b', want, new Map(), both);
    t.same([...a, ...b].sort(), ['stream/1', 'stream/2', 'stream/3'], 'each free stream once');
    t.notOk(a.includes('stream/3'), 'never where it may not run');
    t.same(
      claimsToTake('a', want, new Map(), new Set(['a'])),
      ['stream/1', 'stream/2'],
      'b is dead: a takes both',
    );
    t.same(
      claimsToTake(
        'a',
        want,
        new Map([
          ['stream/1', 'b'],
          ['stream/2', 'b'],
        ]),
        new Set(['a']),
      ),
      [],
      'held (sticky): nothing is taken even where a would be preferred',
    );
    // Just joined: only what the stable choice over all eligible nodes gives it, dead or not.
    const joining = claimsToTake('a', want, new Map(), new Set(['a']), true);
    t.same(joining, a, "joining: a's own share, not b's");
  },
);
