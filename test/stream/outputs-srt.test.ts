// `srt` output with real peers on loopback: a listener output serving ffprobe and
// srt-live-transmit at once (each with its own stats), and sluice → sluice (SRT output caller
// into an SRT input listener) with AES-256, straight and through the lossy test relay.
import { spawn } from 'node:child_process';
import t from 'tap';
import type { StreamInstance } from '../../src/drivers/stream/instance.ts';
import { lossyRelay } from '../helpers/lossy-relay.ts';
import {
  ffprobe,
  freePort,
  httpFor,
  makeFixture,
  makeHost,
  openStream,
  tempDir,
  waitFor,
} from '../helpers/stream-host.ts';

const dir = tempDir(t);
const fixture = makeFixture(dir);
const host = makeHost(dir);
const base = await httpFor(t, host.router);

type Status = Record<string, unknown>;

const stream = (name: string, spec: Record<string, unknown>): Promise<StreamInstance> =>
  openStream(t, host, { 'stream-name': name, ...spec });

const outputOf = (s: StreamInstance): Status => (s.status()['outputs'] as Status[])[0]!;
const inputOf = (s: StreamInstance): Status => (s.status()['inputs'] as Status[])[0]!;

t.test('listener output: ffprobe and srt-live-transmit served at once', async (t) => {
  const port = await freePort();
  const s = await stream('srt-out-l', {
    input: [{ type: 'file', 'file-path': fixture }],
    output: [{ type: 'srt', 'listen-mode': true, port, passphrase: 'sluice-out-secret' }],
  });
  await waitFor(() => s.state() === 'running', 15_000, 'stream running');
  const slt = spawn(
    'srt-live-transmit',
    ['-q', `srt://127.0.0.1:${port}?passphrase=sluice-out-secret`, 'file://con'],
    { stdio: ['ignore', 'pipe', 'ignore'] },
  );
  t.teardown(() => {
    if (slt.exitCode === null) slt.kill('SIGKILL');
  });
  let got = 0;
  slt.stdout.on('data', (d: Buffer) => (got += d.length));
  await waitFor(() => got > 50_000, 15_000, 'srt-live-transmit receives');
  const probe = ffprobe(`srt://127.0.0.1:${port}?mode=caller&passphrase=sluice-out-secret`);
  await waitFor(
    () => outputOf(s)['peers'] !== undefined && (outputOf(s)['peers'] as unknown[]).length === 2,
    15_000,
    'two callers served at once',
  );
  const streams = await probe;
  t.equal(streams.find((x) => x.codec_type === 'video')?.codec_name, 'h264');
  t.equal(streams.find((x) => x.codec_type === 'audio')?.codec_name, 'aac');
  const peers = outputOf(s)['peers'] as Status[];
  t.ok(peers.length >= 1);
  t.type(peers[0]!['rttMs'], 'number', 'per-caller stats');
});

t.test('sluice → sluice over SRT (AES-256), straight and through 5 % loss', async (t) => {
  const port = await freePort();
  const b = await stream('srt-b', {
    input: [
      {
        type: 'srt',
        'listen-mode': true,
        port,
        passphrase: 'sluice-link-secret',
        'aes-type': 2,
        'srt-client-latency-ms': 400,
      },
    ],
  });
  await stream('srt-a', {
    input: [{ type: 'file', 'file-path': fixture }],
    output: [
      {
        type: 'srt',
        address: '127.0.0.1',
        port,
        passphrase: 'sluice-link-secret',
        'aes-type': 2,
        'srt-latency-ms': 400,
      },
    ],
  });
  await waitFor(() => b.state() === 'running', 20_000, 'the receiving stream runs');
  const streams = await ffprobe(`${base}/srt-b/mpegts`);
  t.equal(streams.find((x) => x.codec_type === 'video')?.codec_name, 'h264');
  t.equal(streams.find((x) => x.codec_type === 'audio')?.codec_name, 'aac');

  const port2 = await freePort();
  const relay = await lossyRelay(t, {
    targetPort: port2,
    loss: 0.05,
    reorder: 0.02,
    reorderMs: 4,
    delayMs: 5,
    seed: 23,
  });
  const d = await stream('srt-d', {
    input: [{ type: 'srt', 'listen-mode': true, port: port2, 'srt-client-latency-ms': 400 }],
  });
  await stream('srt-c', {
    input: [{ type: 'file', 'file-path': fixture }],
    output: [{ type: 'srt', address: '127.0.0.1', port: relay.port, 'srt-latency-ms': 400 }],
  });
  await waitFor(() => d.state() === 'running', 20_000, 'the far stream runs');
  const start = Date.now();
  await waitFor(() => Date.now() - start >= 15_000, 20_000, 'the run');
  const tr = inputOf(d)['transport'] as Status;
  const srt = tr['srt'] as Status;
  t.comment(`relay ${JSON.stringify(relay.stats)}; srt ${JSON.stringify(srt)}`);
  t.ok(relay.stats.droppedForward > 20, 'the relay dropped packets');
  t.ok(Number(srt['packetsRetransmitted']) > 0, 'retransmissions received');
  t.equal(Number(srt['packetsDropped']), 0, 'nothing given up');
  t.equal(
    Number((inputOf(d)['tr101290'] as Status)['continuityCountError']),
    0,
    '0 CC errors at the far input',
  );
});
