// Benchmark: ps1 beside SRT over the same lossy relay (test/helpers/lossy-relay.ts; 20 ms each
// way, loss both ways, seeded), equal latency (400 ms = 10 × RTT) at 5 % and 10 % loss. The
// origin (a stream playing a ~10 Mbit/s file into a ps1 or srt output, listening) and the relay
// run in this process; the receiver (a stream with the ps1 or srt input dialling the relay) in a
// child process of its own, so its CPU is its own. Figures, over the same measuring window:
//   overhead   bytes the sender put on the wire (relay, offered before the drop: data, headers,
//              retransmissions) / TS payload bytes the receiver delivered — 1.00 is no overhead
//   control    bytes the receiver sent back (ACK, NACK …) / payload
//   CPU/Gbit   receiver process CPU seconds per Gbit delivered (= share of a core at 1 Gbit/s)
//   CC errors and lost/dropped packets at the receiver.
// Goal (issue 21): ps1's overhead ≤ SRT's at equal latency.
// Run: npx tsx bench/ps1-vs-srt.ts [seconds per run, default 10]
import { spawn, spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import { StreamDriver } from '../src/drivers/stream/driver.ts';
import type { StreamInstance } from '../src/drivers/stream/instance.ts';
import { LossyRelay } from '../test/helpers/lossy-relay.ts';
import { makeHost, streamResource, waitFor } from '../test/helpers/stream-host.ts';
import { benchHeader } from './lib/header.ts';

const LATENCY_MS = 400;
const DELAY_MS = 20;
const BITRATE = '10M';
type Proto = 'ps1' | 'srt';
type Status = Record<string, unknown>;

const input0 = (s: StreamInstance): Status => (s.status()['inputs'] as Status[])[0]!;
const transport = (s: StreamInstance): Status => (input0(s)['transport'] ?? {}) as Status;

async function receiver(recordJson: string, seconds: number): Promise<void> {
  const dir = mkdtempSync(join(tmpdir(), 'sluice-bench-rx-'));
  const host = makeHost(dir);
  const s = (await new StreamDriver().create(
    streamResource({ 'stream-name': 'rx', input: [JSON.parse(recordJson)] }),
    host,
  )) as StreamInstance;
  await waitFor(() => s.state() === 'running', 20_000, 'the receiver running');
  await new Promise((r) => setTimeout(r, 2000)); // past the start
  const bytes = () => Number(transport(s)['bytes'] ?? 0);
  const c0 = process.cpuUsage();
  const b0 = bytes();
  console.log(JSON.stringify({ mark: 'start' }));
  await new Promise((r) => setTimeout(r, seconds * 1000));
  const c = process.cpuUsage(c0);
  const b = bytes() - b0;
  console.log(JSON.stringify({ mark: 'end' }));
  const tr = transport(s);
  const tr101290 = (input0(s)['tr101290'] ?? {}) as Status;
  console.log(
    JSON.stringify({
      payload: b,
      cpuS: (c.user + c.system) / 1e6,
      cc: Number(tr101290['continuityCountError'] ?? 0),
      transport: tr,
    }),
  );
  await s.close();
  rmSync(dir, { recursive: true, force: true });
  process.exit(0);
}

function fixture(dir: string): string {
  const out = join(dir, 'bench.ts');
  const r = spawnSync('ffmpeg', [
    ...['-hide_banner', '-loglevel', 'error', '-y'],
    ...['-f', 'lavfi', '-i', 'testsrc2=size=1280x720:rate=25:duration=10'],
    ...['-f', 'lavfi', '-i', 'sine=frequency=440:sample_rate=48000:duration=10'],
    ...['-c:v', 'libx264', '-preset', 'ultrafast', '-g', '25'],
    ...['-b:v', BITRATE, '-minrate', BITRATE, '-maxrate', BITRATE, '-bufsize', '2M'],
    ...['-x264-params', 'nal-hrd=cbr', '-c:a', 'aac', '-b:a', '128k', '-f', 'mpegts', out],
  ]);
  if (r.status !== 0) throw new Error(`fixture: ${r.stderr}`);
  return out;
}

async function udpPort(): Promise<number> {
  const { createSocket } = await import('node:dgram');
  const s = createSocket('udp4');
  return new Promise((resolve) =>
    s.bind(0, '127.0.0.1', () => {
      const p = s.address().port;
      s.close(() => resolve(p));
    }),
  );
}

async function runOne(file: string, dir: string, proto: Proto, loss: number, seconds: number) {
  const host = makeHost(dir);
  const port = await udpPort();
  const output =
    proto === 'ps1'
      ? { type: 'ps1', port }
      : { type: 'srt', 'listen-mode': true, port, 'srt-latency-ms': LATENCY_MS };
  const origin = (await new StreamDriver().create(
    streamResource({
      'stream-name': `origin-${proto}`,
      input: [{ type: 'file', 'file-path': file }],
      output: [output],
    }),
    host,
  )) as StreamInstance;
  await waitFor(() => origin.state() === 'running', 20_000, 'origin running');
  const relay = await new LossyRelay({
    targetPort: port,
    loss,
    delayMs: DELAY_MS,
    seed: 7,
    maxHeld: 100_000,
  }).start();
  const input =
    proto === 'ps1'
      ? {
          type: 'ps1',
          address: '127.0.0.1',
          port: relay.port,
          'ps1-client-latency-ms': LATENCY_MS,
          'ps1-client-rtt-ms': 2 * DELAY_MS,
        }
      : {
          type: 'srt',
          address: '127.0.0.1',
          port: relay.port,
          'srt-client-latency-ms': LATENCY_MS,
        };
  const child = spawn(
    process.execPath,
    [
      '--import',
      'tsx',
      new URL(import.meta.url).pathname,
      '--receiver',
      JSON.stringify(input),
      String(seconds),
    ],
    { stdio: ['ignore', 'pipe', 'inherit'] },
  );
  let atStart = { fwd: 0, ret: 0 };
  let atEnd = { fwd: 0, ret: 0 };
  let result: Status | null = null;
  for await (const line of createInterface({ input: child.stdout })) {
    let m: Status;
    try {
      m = JSON.parse(line) as Status;
    } catch {
      continue;
    }
    const snap = { fwd: relay.stats.bytesForward, ret: relay.stats.bytesReturn };
    if (m['mark'] === 'start') atStart = snap;
    else if (m['mark'] === 'end') atEnd = snap;
    else result = m;
  }
  relay.close();
  await origin.close();
  if (!result) throw new Error(`${proto}: the receiver gave no result`);
  const payload = Number(result['payload']);
  const sent = atEnd.ret - atStart.ret; // the sender is on the relay's return side
  const control = atEnd.fwd - atStart.fwd;
  const tr = result['transport'] as Status;
  const srt = (tr['srt'] ?? {}) as Status;
  return {
    proto,
    loss,
    mbps: (payload * 8) / seconds / 1e6,
    overhead: sent / payload,
    control: control / payload,
    cpuPerGbit: Number(result['cpuS']) / ((payload * 8) / 1e9),
    cc: Number(result['cc']),
    lost: proto === 'ps1' ? Number(tr['lost']) : Number(srt['packetsDropped'] ?? 0),
  };
}

async function main(): Promise<void> {
  benchHeader('ps1-vs-srt');
  const seconds = Number(process.argv[2] ?? 10);
  const dir = mkdtempSync(join(tmpdir(), 'sluice-bench-ps1-'));
  try {
    const file = fixture(dir);
    console.log(
      `ps1 vs SRT: ~${BITRATE}bit/s TS, ${DELAY_MS} ms each way, latency ${LATENCY_MS} ms, ${seconds} s per run; load ${loadavg()
        .map((l) => l.toFixed(2))
        .join(' ')}`,
    );
    console.log('proto loss  Mbit/s  overhead  control  CPU s/Gbit  CC  lost');
    for (const loss of [0.05, 0.1]) {
      for (const proto of ['ps1', 'srt'] as const) {
        const r = await runOne(file, dir, proto, loss, seconds);
        console.log(
          `${r.proto.padEnd(5)} ${(r.loss * 100).toFixed(0).padStart(3)} % ${r.mbps.toFixed(2).padStart(7)} ` +
            `${r.overhead.toFixed(3).padStart(9)} ${r.control.toFixed(4).padStart(8)} ` +
            `${r.cpuPerGbit.toFixed(2).padStart(11)} ${String(r.cc).padStart(3)} ${String(r.lost).padStart(5)}`,
        );
      }
    }
    console.log(
      `load after: ${loadavg()
        .map((l) => l.toFixed(2))
        .join(' ')}`,
    );
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

if (process.argv[2] === '--receiver')
  await receiver(process.argv[3]!, Number(process.argv[4] ?? 10));
else await main();
