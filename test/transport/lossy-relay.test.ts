// The lossy relay of the transport tests: forwards both ways, drops the configured fraction with
// a reproducible pattern, reorders some, counts all of it and stops with the test.
import { createSocket, type Socket } from 'node:dgram';
import t from 'tap';
import { LossyRelay, lossyRelay, seededRandom } from '../helpers/lossy-relay.ts';
import { waitFor } from '../helpers/stream-host.ts';

function bound(t: { teardown(fn: () => unknown): void }): Promise<Socket> {
  const s = createSocket('udp4');
  t.teardown(() => s.close());
  return new Promise((resolve) => s.bind(0, '127.0.0.1', () => resolve(s)));
}

/** Send n numbered datagrams client → relay; the target echoes each back; collect both sides. */
async function run(
  t: { teardown(fn: () => unknown): void },
  opts: { loss?: number; reorder?: number; seed?: number },
  n: number,
): Promise<{ relay: LossyRelay; atTarget: number[]; atClient: number[] }> {
  const target = await bound(t);
  const client = await bound(t);
  const relay = await lossyRelay(t, { targetPort: target.address().port, reorderMs: 3, ...opts });
  const atTarget: number[] = [];
  const atClient: number[] = [];
  target.on('message', (m, r) => {
    atTarget.push(m.readUInt32BE(0));
    target.send(m, r.port, r.address); // the return path: to the relay's back socket
  });
  client.on('message', (m) => atClient.push(m.readUInt32BE(0)));
  for (let i = 0; i < n; i++) {
    const b = Buffer.alloc(4);
    b.writeUInt32BE(i);
    client.send(b, relay.port, '127.0.0.1');
    if (i % 50 === 49) await new Promise((r) => setTimeout(r, 2)); // stay under the socket buffers
  }
  const deadline = Date.now() + 5000;
  const settled = () =>
    relay.stats.forwarded + relay.stats.droppedForward + relay.stats.overflow >= n &&
    relay.stats.returned + relay.stats.droppedReturn >= atTarget.length &&
    atClient.length === relay.stats.returned;
  while (!settled() && Date.now() < deadline) await new Promise((r) => setTimeout(r, 10));
  return { relay, atTarget, atClient };
}

t.test('seeded PRNG: same seed, same sequence; uniform enough', async (t) => {
  const a = seededRandom(42);
  const b = seededRandom(42);
  const xs = Array.from({ length: 1000 }, () => a());
  t.same(
    xs,
    Array.from({ length: 1000 }, () => b()),
  );
  const mean = xs.reduce((s, x) => s + x, 0) / xs.length;
  t.ok(mean > 0.45 && mean < 0.55, `mean ${mean}`);
  t.ok(xs.every((x) => x >= 0 && x < 1));
});

t.test('no loss: every datagram forwarded and returned, in order', async (t) => {
  const { relay, atTarget, atClient } = await run(t, {}, 500);
  t.equal(atTarget.length, 500);
  t.equal(atClient.length, 500);
  t.same(
    atTarget,
    [...atTarget].sort((x, y) => x - y),
  );
  t.equal(relay.stats.dropped, 0);
});

t.test('10 % loss each way: about 19 % gone end to end, reproducible with the seed', async (t) => {
  const one = await run(t, { loss: 0.1, seed: 7 }, 2000);
  const two = await run(t, { loss: 0.1, seed: 7 }, 2000);
  const forwardLoss = 1 - one.atTarget.length / 2000;
  t.ok(forwardLoss > 0.07 && forwardLoss < 0.13, `forward loss ${forwardLoss}`);
  t.equal(one.relay.stats.forwarded, one.atTarget.length);
  t.equal(one.relay.stats.droppedForward, 2000 - one.atTarget.length);
  t.equal(one.relay.stats.dropped, 2000 - one.atClient.length);
  t.same(one.atTarget, two.atTarget, 'same seed, same datagrams dropped');
});

t.test('reorder: held-back datagrams arrive after later ones, none lost', async (t) => {
  const { relay, atTarget } = await run(t, { reorder: 0.2, seed: 3 }, 1000);
  t.equal(atTarget.length, 1000);
  t.ok(relay.stats.reordered > 100, `reordered ${relay.stats.reordered}`);
  let inversions = 0;
  for (let i = 1; i < atTarget.length; i++) if (atTarget[i]! < atTarget[i - 1]!) inversions++;
  t.ok(inversions > 0, `inversions ${inversions}`);
});

t.test('close: nothing forwarded afterwards, held datagrams discarded, idempotent', async (t) => {
  const target = await bound(t);
  const client = await bound(t);
  let got = 0;
  target.on('message', () => got++);
  const relay = await new LossyRelay({
    targetPort: target.address().port,
    delayMs: 200,
  }).start();
  client.send(Buffer.from('x'), relay.port, '127.0.0.1');
  await waitFor(() => relay.stats.bytesForward > 0, 2000, 'the datagram held by the relay');
  relay.close();
  relay.close();
  // fixed wait: past the relay's 200 ms delay, the time a held datagram would have come.
  await new Promise((r) => setTimeout(r, 300));
  t.equal(got, 0);
});
