// Who an SRT output listener admits, with real callers on loopback: srt-live-transmit with a
// wrong and the right stream id (`srt-client-login`), from a refused and the permitted address
// (`address`: 127.0.0.2 and 127.0.0.1 are both this machine); and two sluice servers of one
// cluster (`peer-auth`, the stream id derived from `cluster.domain`): an input of the same
// domain gets the stream, one of another domain is refused with the reason on both sides, and
// an input with peer-auth on a server without a domain says what is missing.
import { spawn } from 'node:child_process';
import { Registry } from 'prom-client';
import t, { type Test } from 'tap';
import type { StreamInstance } from '../../src/drivers/stream/instance.ts';
import { METRICS_REGISTRY_SERVICE } from '../../src/drivers/stream/metrics.ts';
import { CLUSTER_SERVICE, PEER_AUTH_NO_DOMAIN } from '../../src/engine/cluster.ts';
import type { Host } from '../../src/reconciler/driver.ts';
import {
  freePort,
  makeFixture,
  makeHost,
  openStream,
  tempDir,
  waitFor,
} from '../helpers/stream-host.ts';

const dir = tempDir(t);
const fixture = makeFixture(dir);

type Status = Record<string, unknown>;
const outputOf = (s: StreamInstance): Status => (s.status()['outputs'] as Status[])[0]!;
const inputOf = (s: StreamInstance): Status => (s.status()['inputs'] as Status[])[0]!;

/** A server: its own host (services), in the cluster `domain` as `node` when given. */
function server(domain?: string, node = 'node') {
  const host = makeHost(dir);
  if (domain !== undefined) host.services.set(CLUSTER_SERVICE, { domain, nodeName: node });
  return host;
}

const stream = (
  t: Test,
  host: Host,
  name: string,
  spec: Record<string, unknown>,
): Promise<StreamInstance> => openStream(t, host, { 'stream-name': name, ...spec });

/** srt-live-transmit dialling `url`; resolves with the bytes it received and its exit. */
function caller(t: Test, url: string) {
  const p = spawn('srt-live-transmit', ['-q', url, 'file://con'], {
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  t.teardown(() => {
    if (p.exitCode === null) p.kill('SIGKILL');
  });
  const r = { got: 0, err: '' };
  p.stdout.on('data', (d: Buffer) => (r.got += d.length));
  p.stderr.on('data', (d: Buffer) => (r.err += d.toString()));
  return r;
}

t.test('listener output: the stream id and the address a caller must have', async (t) => {
  const host = server();
  const port = await freePort();
  const s = await stream(t, host, 'srt-gate', {
    input: [{ type: 'file', 'file-path': fixture }],
    output: [
      {
        type: 'srt',
        'listen-mode': true,
        port,
        address: '127.0.0.1',
        'srt-client-login': 'edge-feed',
      },
    ],
  });
  await waitFor(() => s.state() === 'running', 15_000, 'stream running');

  const wrongId = caller(t, `srt://127.0.0.1:${port}?streamid=someone-else`);
  await waitFor(
    () => String(outputOf(s)['lastRejection'] ?? '').includes('someone-else'),
    10_000,
    'a wrong stream id refused',
  );
  t.match(
    outputOf(s)['lastRejection'],
    /stream id "someone-else" is not the expected one \(1401\)/,
  );
  t.equal(wrongId.got, 0, 'the refused caller got nothing');

  // From 127.0.0.2 (a sluice input bound there: srt-live-transmit's `adapter` turns a caller
  // into rendezvous mode), with the right stream id.
  const elsewhere = await stream(t, host, 'srt-elsewhere', {
    input: [
      {
        type: 'srt',
        address: '127.0.0.1',
        port,
        'bind-if': '127.0.0.2',
        'srt-client-login': 'edge-feed',
      },
    ],
  });
  await waitFor(
    () => String(outputOf(s)['lastRejection'] ?? '').includes('127.0.0.2'),
    10_000,
    'a caller from another address refused',
  );
  t.match(outputOf(s)['lastRejection'], /caller 127\.0\.0\.2 refused: not the permitted address/);
  t.not(elsewhere.state(), 'running');
  await elsewhere.close();

  const right = caller(t, `srt://127.0.0.1:${port}?streamid=edge-feed`);
  await waitFor(() => right.got > 50_000, 15_000, 'the expected caller receives');
  const peers = outputOf(s)['peers'] as Status[];
  t.equal(peers.length, 1, 'only the admitted caller is served');
  t.equal(peers[0]!['streamId'], 'edge-feed');
  t.ok(Number(outputOf(s)['refused']) >= 2, `refusals counted (${outputOf(s)['refused']})`);
});

t.test('peer-auth: a cluster peer gets the stream, another domain is refused', async (t) => {
  const origin = server('cluster-secret-7f3a', 'origin-1');
  const registry = new Registry();
  origin.services.set(METRICS_REGISTRY_SERVICE, registry);
  const port = await freePort();
  const src = await stream(t, origin, 'srt-origin', {
    input: [{ type: 'file', 'file-path': fixture }],
    output: [{ type: 'srt', 'listen-mode': true, port, 'peer-auth': true }],
  });
  await waitFor(() => src.state() === 'running', 15_000, 'origin running');

  const edge = server('cluster-secret-7f3a', 'edge-2');
  const pull = await stream(t, edge, 'srt-edge', {
    input: [{ type: 'srt', address: '127.0.0.1', port, 'peer-auth': true }],
  });
  await waitFor(() => pull.state() === 'running', 15_000, 'the peer receives the stream');
  const peers = outputOf(src)['peers'] as Status[];
  t.match(peers[0]!['streamId'], /^#!::u=edge-2,s=[A-Za-z0-9_-]{32}$/, 'the derived stream id');
  t.notMatch(JSON.stringify(peers), /cluster-secret/, 'the domain itself never travels');

  const stranger = server('another-domain-91c2', 'edge-9');
  const refused = await stream(t, stranger, 'srt-stranger', {
    input: [{ type: 'srt', address: '127.0.0.1', port, 'peer-auth': true }],
  });
  await waitFor(
    () =>
      String(inputOf(refused)['message'] ?? '').length > 0 &&
      outputOf(src)['lastRejection'] !== undefined,
    15_000,
    'the stranger refused',
  );
  t.match(outputOf(src)['lastRejection'], /u=edge-9.*is not a cluster peer's \(1401\)/);
  t.match(
    inputOf(refused)['message'],
    /1401|unauthori[sz]ed|reject/i,
    `caller told: ${inputOf(refused)['message']}`,
  );
  t.not(refused.state(), 'running');
  t.equal((outputOf(src)['peers'] as Status[]).length, 1, 'the peer is still served alone');
  const text = await registry.metrics();
  const sent =
    /sluice_stream_output_transport_packets_total\{stream="srt-origin",output="0",protocol="srt",kind="sent"\} (\d+)/.exec(
      text,
    );
  t.ok(Number(sent?.[1]) > 0, `/metrics: packets the output sent (${sent?.[1]})`);
  t.match(
    text,
    /sluice_stream_output_transport_rtt_seconds\{stream="srt-origin",output="0",protocol="srt"\} \d/,
  );
});

t.test('peer-auth without a cluster domain: the input says what is missing', async (t) => {
  const s = await stream(t, server(), 'srt-nodomain', {
    input: [{ type: 'srt', address: '127.0.0.1', port: await freePort(), 'peer-auth': true }],
  });
  await waitFor(() => inputOf(s)['message'] !== undefined, 10_000, 'the input reports');
  t.equal(inputOf(s)['message'], PEER_AUTH_NO_DOMAIN);
});
