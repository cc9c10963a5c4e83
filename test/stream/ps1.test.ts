// ps1 sluice → sluice: a stream with a ps1 output (server) and another whose ps1 input (client)
// dials it, in one process on loopback. Through the lossy relay at 10 % loss and 20 ms each way:
// 0 CC errors and the recoveries in the counters; check-lost 5 % recovered; login, password,
// passphrase and peer-auth admitted or refused with the reason on both sides.
import t, { type Test } from 'tap';
import { StreamDriver } from '../../src/drivers/stream/driver.ts';
import type { StreamInstance } from '../../src/drivers/stream/instance.ts';
import { CLUSTER_SERVICE } from '../../src/engine/cluster.ts';
import type { Host } from '../../src/reconciler/driver.ts';
import { lossyRelay } from '../helpers/lossy-relay.ts';
import { ccErrors, input0, makeFecFixture, transport, udpPort } from '../helpers/prompeg.ts';
import { makeHost, streamResource, tempDir, waitFor } from '../helpers/stream-host.ts';

type Status = Record<string, unknown>;
const dir = tempDir(t);
const fixture = makeFecFixture(dir, 10); // ~2 Mbit/s: ~190 DATA a second
const driver = new StreamDriver();
const RUN_MS = Number(process.env['SLUICE_PS1_SECONDS'] ?? 12) * 1000;
const out0 = (s: StreamInstance): Status => (s.status()['outputs'] as Status[])[0]!;

function server(domain?: string, node = 'node'): Host {
  const host = makeHost(dir);
  if (domain !== undefined) host.services.set(CLUSTER_SERVICE, { domain, nodeName: node });
  return host;
}

async function stream(t: Test, host: Host, name: string, spec: Status): Promise<StreamInstance> {
  const inst = (await driver.create(
    streamResource({ 'stream-name': name, ...spec }),
    host,
  )) as StreamInstance;
  t.teardown(() => inst.close());
  return inst;
}

/** A stream playing the fixture with one ps1 output on a free port; waits until it runs. */
async function origin(t: Test, host: Host, name: string, output: Status) {
  const port = await udpPort();
  const s = await stream(t, host, name, {
    input: [{ type: 'file', 'file-path': fixture }],
    output: [{ type: 'ps1', port, ...output }],
  });
  await waitFor(() => s.state() === 'running', 15_000, `${name} running`);
  return { s, port };
}

async function run(ms: number): Promise<void> {
  const start = Date.now();
  await waitFor(() => Date.now() - start >= ms, ms + 5000, 'the run');
}

t.test(
  'through the relay at 10 % loss and 40 ms RTT: 0 CC errors, recoveries counted',
  async (t) => {
    const host = server();
    const { s: tx, port } = await origin(t, host, 'ps1-origin', {
      'ps1-server-login': 'edge',
      'ps1-server-password': 'pw-1',
    });
    const relay = await lossyRelay(t, {
      targetPort: port,
      loss: 0.1,
      delayMs: 20,
      reorder: 0.02,
      reorderMs: 5,
      seed: 21,
    });
    const rx = await stream(t, host, 'ps1-edge', {
      input: [
        {
          type: 'ps1',
          address: '127.0.0.1',
          port: relay.port,
          'ps1-client-login': 'edge',
          'ps1-client-password': 'pw-1',
          'ps1-client-rtt-ms': 40,
          'ps1-client-latency-ms': 400, // ≥ 4 × the 40 ms round trip (+ the relay's jitter)
        },
      ],
    });
    await waitFor(() => rx.state() === 'running', 15_000, 'the edge running');
    await run(RUN_MS);
    const tr = transport(rx);
    const out = out0(tx);
    t.comment(`relay ${JSON.stringify(relay.stats)}`);
    t.comment(`input ${JSON.stringify(tr)}`);
    t.comment(`output ${JSON.stringify(out)}`);
    t.equal(ccErrors(rx), 0, '0 CC errors at the receiving stream’s input');
    t.equal(tr['state'], 'playing');
    // The relay's client is the ps1 input: DATA comes back on its return path.
    t.ok(relay.stats.droppedReturn > 100, 'the relay dropped DATA');
    t.ok(relay.stats.droppedForward > 5, 'and NACKs/ACKs');
    t.ok(Number(tr['recovered']) > 100, `recovered ${tr['recovered']}`);
    t.equal(Number(tr['lost']), 0, 'nothing given up');
    t.ok(Number(tr['rttMs']) >= 35 && Number(tr['rttMs']) < 200, `RTT measured: ${tr['rttMs']} ms`);
    const sessions = out['sessions'] as Status[];
    t.equal(sessions.length, 1);
    t.match(sessions[0], { peer: /^127\.0\.0\.1:/, login: 'edge', lost: 0 });
    t.ok(Number(sessions[0]!['retransmitted']) > 100, 'the server retransmitted');
    t.ok(Number(sessions[0]!['recovered']) > 0, 'the client reports its recoveries to the server');
    const m = rx.metricsSnapshot();
    t.equal(m.transport?.protocol, 'ps1');
    t.ok(Number(m.transport?.packets['recovered']) > 100, '/metrics: recovered');
    t.ok(Number(m.transport?.rttSeconds) > 0.03, '/metrics: RTT');
  },
);

t.test('check-lost 5 %: the deliberate drops show as recovered losses, 0 CC errors', async (t) => {
  const host = server();
  const { port } = await origin(t, host, 'ps1-origin-cl', {});
  const rx = await stream(t, host, 'ps1-edge-cl', {
    input: [
      {
        type: 'ps1',
        address: '127.0.0.1',
        port,
        'check-lost': 5,
        'ps1-client-rtt-ms': 40,
        'ps1-client-latency-ms': 250,
      },
    ],
  });
  await waitFor(() => rx.state() === 'running', 15_000, 'the edge running');
  await run(6000);
  const tr = transport(rx);
  t.comment(JSON.stringify(tr));
  t.ok(Number(tr['checkDropped']) > 20, `dropped on purpose: ${tr['checkDropped']}`);
  t.ok(
    Number(tr['recovered']) >= Number(tr['checkDropped']) * 0.9,
    'recovered (all but those still in flight)',
  );
  t.equal(Number(tr['lost']), 0);
  t.equal(ccErrors(rx), 0, '0 CC errors');
});

t.test('wrong login or password: refused, the reason on both sides', async (t) => {
  const host = server();
  const { s: tx, port } = await origin(t, host, 'ps1-origin-auth', {
    'ps1-server-login': 'edge',
    'ps1-server-password': 'right password',
    passphrase: 'a shared passphrase',
  });
  const bad = await stream(t, host, 'ps1-bad-pw', {
    input: [
      {
        type: 'ps1',
        address: '127.0.0.1',
        port,
        'ps1-client-login': 'edge',
        'ps1-client-password': 'wrong password',
        passphrase: 'a shared passphrase',
      },
    ],
  });
  await waitFor(() => input0(bad)['message'], 10_000, 'the refusal');
  t.equal(input0(bad)['message'], 'refused by the server: login or password refused');
  t.equal(input0(bad)['state'], 'error');
  t.match(
    out0(tx)['lastRejection'],
    /^127\.0\.0\.1:\d+ \(login "edge"\): login or password refused$/,
  );
  t.notMatch(JSON.stringify(out0(tx)), /wrong password|right password/, 'no password in status');
  await bad.close();

  const badPass = await stream(t, host, 'ps1-bad-pass', {
    input: [
      {
        type: 'ps1',
        address: '127.0.0.1',
        port,
        'ps1-client-login': 'edge',
        'ps1-client-password': 'right password',
        passphrase: 'not the same passphrase',
      },
    ],
  });
  await waitFor(() => input0(badPass)['message'], 10_000, 'the refusal');
  t.equal(input0(badPass)['message'], 'refused by the server: passphrase differs');
  await badPass.close();

  const good = await stream(t, host, 'ps1-good', {
    input: [
      {
        type: 'ps1',
        address: '127.0.0.1',
        port,
        'ps1-client-login': 'edge',
        'ps1-client-password': 'right password',
        passphrase: 'a shared passphrase',
      },
    ],
  });
  await waitFor(() => good.state() === 'running', 15_000, 'the right login plays');
  t.match(transport(good), { state: 'playing', encrypted: true });
  t.ok(Number(out0(tx)['refused']) >= 2, 'refusals counted');
});

t.test('peer-auth: the same cluster domain plays, another is refused', async (t) => {
  const originHost = server('ps1-cluster-7f3a', 'origin-1');
  const { s: tx, port } = await origin(t, originHost, 'ps1-origin-peer', { 'peer-auth': true });
  const edge = await stream(t, server('ps1-cluster-7f3a', 'edge-2'), 'ps1-peer', {
    input: [{ type: 'ps1', address: '127.0.0.1', port, 'peer-auth': true }],
  });
  await waitFor(() => edge.state() === 'running', 15_000, 'the peer plays');
  t.match((out0(tx)['sessions'] as Status[])[0], { login: 'edge-2', peerAuth: true });
  t.notMatch(JSON.stringify(out0(tx)), /ps1-cluster-7f3a/, 'the domain never shows');

  const stranger = await stream(t, server('another-domain', 'edge-9'), 'ps1-stranger', {
    input: [{ type: 'ps1', address: '127.0.0.1', port, 'peer-auth': true }],
  });
  await waitFor(() => input0(stranger)['message'], 10_000, 'the refusal');
  t.match(input0(stranger)['message'], /refused by the server: peer-auth refused: not a peer/);
  t.match(out0(tx)['lastRejection'], /login "edge-9"\): peer-auth refused: not a peer/);

  const plain = await stream(t, server(), 'ps1-no-login', {
    input: [{ type: 'ps1', address: '127.0.0.1', port }],
  });
  await waitFor(() => input0(plain)['message'], 10_000, 'the refusal');
  t.equal(
    input0(plain)['message'],
    'refused by the server: login or password refused',
    'peer-auth alone admits only peers',
  );
});
