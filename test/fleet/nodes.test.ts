// Three nodes from one git repository (issue 24's acceptance, placement part): 30 streams
// placed by labels; each node runs exactly its share; a commit that changes one stream's
// input changes that stream on its node only (the others apply nothing); a commit that moves a
// stream from one node to another stops it on the first and starts it on the second.
import t from 'tap';
import { place } from '../../src/config/placement.ts';
import { makeRepo } from '../helpers/git.ts';
import { freePort, startServer, waitFor } from '../helpers/server.ts';

const POLL_SEC = 1;
const APPLY_MS = 30_000;

interface Status {
  revision: string;
  node?: { name: string; declared: boolean; labels: Record<string, string>; placed: number };
  lastResult?: { summary: { add: number; change: number; replace: number; destroy: number } };
  resources: { kind: string; key: string; state: string }[];
}

function config(streams: Record<string, unknown>[]): Record<string, unknown> {
  return {
    cluster: {
      nodes: {
        a: { labels: { site: 'ams', role: 'origin' } },
        b: { labels: { site: 'fra', role: 'origin' } },
        c: { labels: { site: 'fra', role: 'edge' } },
      },
    },
    stream: streams,
  };
}

const text = (doc: Record<string, unknown>) => `${JSON.stringify(doc, null, 2)}\n`;

t.test('three nodes, one repository, each runs its share', async (t) => {
  const ports = await Promise.all(Array.from({ length: 30 }, () => freePort()));
  const streams = ports.map((port, i) => ({
    id: i + 1,
    'stream-name': `ch${i + 1}`,
    pause: false,
    // Ten on the ams site (node a), twenty anywhere in fra (b or c, by the stable spread).
    placement: i < 10 ? { site: 'ams' } : { site: 'fra' },
    input: [{ type: 'udp', port, 'bind-if': '127.0.0.1' }],
  }));
  const repo = await makeRepo(t);
  await repo.push(text(config(streams)), 'thirty streams');
  const nodes = await Promise.all(
    ['a', 'b', 'c'].map(async (name) => {
      const [port, epg] = [await freePort(), await freePort()];
      const srv = await startServer(t, {
        port,
        args: [
          '--git',
          repo.url,
          '--poll',
          String(POLL_SEC),
          '--node',
          name,
          '--port',
          String(port),
          '--epg-port',
          String(epg),
        ],
      });
      return { name, srv };
    }),
  );
  const status = async (srv: (typeof nodes)[number]['srv']) =>
    (await (await fetch(`${srv.url}/data/status`)).json()) as Status;
  const streamsOf = (st: Status) =>
    st.resources
      .filter((r) => r.kind === 'stream')
      .map((r) => r.key)
      .sort((x, y) => Number(x) - Number(y));
  const applied = (revisionNot?: string) =>
    Promise.all(
      nodes.map((n) =>
        waitFor(
          `node ${n.name} applied`,
          async () => {
            const st = await status(n.srv);
            return st.revision && st.revision !== revisionNot && st.lastResult ? st : undefined;
          },
          APPLY_MS,
        ),
      ),
    );

  const first = await applied();
  const expected = place(config(streams));
  const want = (node: string) =>
    [...expected.of]
      .filter(([id, w]) => id.startsWith('stream/') && w !== 'everywhere' && w.nodes.includes(node))
      .map(([id]) => id.slice('stream/'.length))
      .sort((x, y) => Number(x) - Number(y));
  const shares = first.map(streamsOf);
  nodes.forEach((n, i) => {
    t.same(
      shares[i],
      want(n.name),
      `node ${n.name} runs exactly its share (${shares[i]!.length} streams)`,
    );
    t.match(first[i]!.node, { name: n.name, declared: true, placed: shares[i]!.length });
  });
  t.equal(shares[0]!.length, 10, 'the ams streams are all on a');
  t.equal(shares[1]!.length + shares[2]!.length, 20, 'the fra streams are spread over b and c');
  t.ok(shares[1]!.length > 0 && shares[2]!.length > 0, 'both fra nodes have some');
  t.same(first[1]!.node?.labels, { site: 'fra', role: 'origin' });

  // One stream's input changes: only its node applies anything.
  const target = Number(shares[2]![0]);
  const changed = streams.map((s) =>
    s.id === target
      ? {
          ...s,
          input: [
            {
              ...s.input[0]!,
              'bind-if': '127.0.0.1',
              port: s.input[0]!.port,
              'mcast-rejoin-interval': 30,
            },
          ],
        }
      : s,
  );
  await repo.push(text(config(changed)), `change stream ${target}'s input`);
  const second = await applied(first[0]!.revision);
  const summary = (st: Status) => st.lastResult!.summary;
  t.match(summary(second[2]!), { add: 0, destroy: 0 }, 'node c: no stream added or removed');
  t.equal(
    summary(second[2]!).change + summary(second[2]!).replace,
    1,
    'node c: one stream changed',
  );
  for (const i of [0, 1])
    t.same(
      summary(second[i]!),
      { add: 0, change: 0, replace: 0, destroy: 0 },
      `node ${nodes[i]!.name}: nothing applied`,
    );

  // A stream moves from a to b.
  const moving = Number(shares[0]![0]);
  const moved = changed.map((s) => (s.id === moving ? { ...s, placement: 'b' } : s));
  await repo.push(text(config(moved)), `move stream ${moving} to b`);
  const third = await applied(second[0]!.revision);
  t.notOk(streamsOf(third[0]!).includes(String(moving)), 'gone from a');
  t.ok(streamsOf(third[1]!).includes(String(moving)), 'running on b');
  t.match(summary(third[0]!), { destroy: 1, add: 0 });
  t.match(summary(third[1]!), { add: 1, destroy: 0 });
  t.same(
    summary(third[2]!),
    { add: 0, change: 0, replace: 0, destroy: 0 },
    'node c: nothing applied',
  );
});
