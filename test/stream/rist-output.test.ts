// RIST output: a stream sends its output to a RIST receiver. ristreceiver (rist-tools) takes it
// and ffprobe decodes what it forwards; and sluice → sluice: a stream's rist output into another
// stream's rist input, directly with a passphrase, and through the lossy relay (5 % loss each way)
// with 0 CC errors at the receiving input and the retransmissions in the sender's status.
import { Registry } from 'prom-client';
import t, { type Test } from 'tap';
import { StreamDriver } from '../../src/drivers/stream/driver.ts';
import type { StreamInstance } from '../../src/drivers/stream/instance.ts';
import { METRICS_REGISTRY_SERVICE } from '../../src/drivers/stream/metrics.ts';
import { lossyRelay } from '../helpers/lossy-relay.ts';
import {
  ffprobe,
  freePort,
  httpFor,
  makeFixture,
  makeHost,
  peer,
  streamResource,
  tempDir,
  waitFor,
} from '../helpers/stream-host.ts';

const dir = tempDir(t);
const fixture = makeFixture(dir);
const host = makeHost(dir);
const registry = new Registry();
host.services.set(METRICS_REGISTRY_SERVICE, registry);
const driver = new StreamDriver();
const base = await httpFor(t, host.router);

type Status = Record<string, unknown>;
const output0 = (s: StreamInstance): Status => (s.status()['outputs'] as Status[])[0]!;
const input0 = (s: StreamInstance): Status => (s.status()['inputs'] as Status[])[0]!;
const transport = (s: StreamInstance): Status => input0(s)['transport'] as Status;
const ccErrors = (s: StreamInstance): number =>
  Number((input0(s)['tr101290'] as Status | undefined)?.['continuityCountError'] ?? 0);

async function stream(
  t: Test,
  name: string,
  spec: Record<string, unknown>,
): Promise<StreamInstance> {
  const inst = (await driver.create(
    streamResource({ 'stream-name': name, ...spec }),
    host,
  )) as StreamInstance;
  t.teardown(() => inst.close());
  started.set(name, inst);
  await waitFor(() => inst.state() === 'running', 15_000, `${name} running`);
  return inst;
}

const fileInput = [{ type: 'file', 'file-path': fixture }];
const started = new Map<string, StreamInstance>();
const driverStream = (name: string): StreamInstance => started.get(name)!;

t.test('rist output into ristreceiver, decoded by ffprobe', async (t) => {
  const port = await freePort();
  const udp = await freePort();
  peer(t, 'ristreceiver', [
    '-v',
    '3',
    '-p',
    '1',
    '-i',
    `rist://@127.0.0.1:${port}`,
    '-o',
    `udp://127.0.0.1:${udp}`,
  ]);
  const s = await stream(t, 'rist-out', {
    input: fileInput,
    output: [{ type: 'rist', address: '127.0.0.1', port }],
  });
  const streams = await ffprobe(`udp://127.0.0.1:${udp}?timeout=8000000`);
  t.equal(streams.find((x) => x.codec_type === 'video')?.codec_name, 'h264');
  t.equal(streams.find((x) => x.codec_type === 'audio')?.codec_name, 'aac');
  const o = output0(s);
  t.equal(o['connected'], true, 'the receiver answers');
  t.ok(Number(o['packets']) > 0, 'payloads sent');
});

t.test('sluice → sluice over RIST main with a passphrase', async (t) => {
  const port = await freePort();
  const secret = 'between two sluices';
  await stream(t, 'rist-a', {
    input: fileInput,
    output: [{ type: 'rist', address: '127.0.0.1', port, passphrase: secret }],
  });
  const b = await stream(t, 'rist-b', {
    input: [
      {
        type: 'rist',
        'rist-addr-port': [port],
        'rist-addr-intf': ['127.0.0.1'],
        passphrase: secret,
      },
    ],
  });
  const streams = await ffprobe(`${base}/rist-b/mpegts`);
  t.equal(streams.find((x) => x.codec_type === 'video')?.id, '0x100', 'source video PID');
  t.equal(streams.find((x) => x.codec_type === 'audio')?.id, '0x101', 'source audio PID');
  t.equal(transport(b)['encrypted'], true);
});

t.test('sluice → sluice through 5 % loss: 0 CC errors, retransmissions on both ends', async (t) => {
  const port = await freePort();
  const relay = await lossyRelay(t, {
    targetPort: port,
    loss: 0.05,
    reorder: 0.02,
    reorderMs: 4,
    delayMs: 5,
    seed: 161,
  });
  await stream(t, 'rist-lossy-a', {
    input: fileInput,
    output: [{ type: 'rist', address: '127.0.0.1', port: relay.port }],
  });
  const b = await stream(t, 'rist-lossy-b', {
    input: [{ type: 'rist', 'rist-addr-port': [port], 'rist-addr-intf': ['127.0.0.1'] }],
  });
  const a = driverStream('rist-lossy-a');
  const seconds = Number(process.env['SLUICE_RIST_LOSSY_SECONDS'] ?? 15);
  const start = Date.now();
  await waitFor(() => Date.now() - start >= seconds * 1000, seconds * 1000 + 5000, 'the run');
  const o = output0(a);
  const tr = transport(b);
  t.comment(
    `relay: ${JSON.stringify(relay.stats)}; sender: sent ${o['sent']} retransmitted ${o['retransmitted']} rtt ${o['rttMs']} ms; receiver: missing ${tr['missing']} recovered ${tr['recovered']} lost ${tr['lost']}`,
  );
  t.ok(relay.stats.droppedForward > 20, 'the relay dropped data packets');
  t.ok(Number(o['retransmitted']) > 0, 'the sending stream retransmitted');
  t.ok(Number(tr['recovered']) > 0, 'the receiving stream recovered');
  t.equal(Number(tr['lost']), 0, 'nothing lost for good');
  t.equal(ccErrors(b), 0, '0 CC errors at the receiving input');
  const text = await registry.metrics();
  const re = (kind: string) =>
    new RegExp(
      `sluice_stream_output_transport_packets_total\\{stream="rist-lossy-a",output="0",protocol="rist",kind="${kind}"\\} (\\d+)`,
    );
  t.ok(Number(re('retransmitted').exec(text)?.[1]) > 0, '/metrics: the output retransmitted');
  t.ok(Number(re('sent').exec(text)?.[1]) > 1000, '/metrics: and sent');
  t.match(
    text,
    /sluice_stream_output_transport_rtt_seconds\{stream="rist-lossy-a",output="0",protocol="rist"\} 0\.\d+/,
  );
});

t.test(
  'one output, two paths (rist-addr-*): duplicated over two lossy relays, merged whole',
  async (t) => {
    const [p1, p2] = [await freePort(), await freePort()];
    const r1 = await lossyRelay(t, { targetPort: p1, loss: 0.1, seed: 31 });
    const r2 = await lossyRelay(t, { targetPort: p2, loss: 0.1, seed: 32 });
    await stream(t, 'rist-2path-a', {
      input: fileInput,
      output: [
        {
          type: 'rist',
          address: '127.0.0.1',
          port: r1.port,
          'rist-addr-address': ['127.0.0.1'],
          'rist-addr-port': [r2.port],
        },
      ],
    });
    const b = await stream(t, 'rist-2path-b', {
      input: [
        {
          type: 'rist',
          'rist-addr-port': [p1, p2],
          'rist-addr-intf': ['127.0.0.1', '127.0.0.1'],
          'rist-recovery-rtt-max': 1000,
        },
      ],
    });
    const a = driverStream('rist-2path-a');
    await waitFor(() => output0(a)['peersConnected'] === 2, 10_000, 'both receivers answer');
    await waitFor(() => transport(b)['peersConnected'] === 2, 10_000, 'both paths up');
    const lost0 = Number(transport(b)['lost']);
    const cc0 = ccErrors(b);
    const start = Date.now();
    await waitFor(() => Date.now() - start >= 8000, 12_000, 'the run');
    const tr = transport(b);
    t.comment(
      `relays: ${r1.stats.droppedForward} and ${r2.stats.droppedForward} dropped; receiver: missing ${tr['missing']} recovered ${tr['recovered']} lost ${tr['lost']}`,
    );
    t.ok(r1.stats.forwarded > 100 && r2.stats.forwarded > 100, 'both paths carried the stream');
    t.equal(output0(a)['peers'], 2);
    t.equal(output0(a)['destination'], `127.0.0.1:${r1.port}, 127.0.0.1:${r2.port}`);
    t.equal(Number(tr['lost']) - lost0, 0, 'nothing lost');
    t.equal(ccErrors(b) - cc0, 0, '0 CC errors');
  },
);
