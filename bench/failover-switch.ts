// Failover switch time over 20 switches: two UDP inputs, each fed by a paced constant-rate
// sender (test/helpers/udp-flood.c playing the same TS file at its own bit rate, as an encoder
// or a multicast feed does), the active one's sender killed in turn (fallback-check off,
// stream-timeout 1 s). Reports kill → switch decision and decision → first output packet (the
// new input's PAT let through by the splicer). `ffmpeg -re -c copy` as the sender sent in
// bursts up to 250 ms apart, which the second figure then measured instead of sluice. Peer:
// none does the same work in-process; the floor is the configured stream-timeout.
// Run: npx tsx bench/failover-switch.ts   Figures: printed; copy them to bench/RESULTS.md.
import { type ChildProcess, execFileSync, spawn } from 'node:child_process';
import { statSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { StreamDriver } from '../src/drivers/stream/driver.ts';
import type { StreamInstance } from '../src/drivers/stream/instance.ts';
import {
  freePort,
  makeFixture,
  makeHost,
  streamResource,
  tempDir,
  waitFor,
} from '../test/helpers/stream-host.ts';
import { benchHeader } from './lib/header.ts';

benchHeader('failover-switch');

const SWITCHES = 20;
const cleanups: (() => unknown)[] = [];
const t = { teardown: (f: () => unknown) => cleanups.push(f) };
const dir = tempDir(t, 'sluice-bench-');
const fixture = makeFixture(dir, 10);
const ports = [await freePort(), await freePort()];
// The paced sender: the fixture at its own rate, smoothly (a few datagrams every 0.5 ms at most).
const senderBin = join(dir, 'udp-send');
execFileSync('cc', [
  '-O2',
  '-o',
  senderBin,
  fileURLToPath(new URL('../test/helpers/udp-flood.c', import.meta.url)),
]);
const mbps = (statSync(fixture).size * 8) / 10 / 1e6;
const play = (port: number): ChildProcess => {
  const p = spawn(
    senderBin,
    [fixture, '127.0.0.1', String(port), mbps.toFixed(3), '600', '100000000'],
    {
      stdio: 'ignore',
    },
  );
  cleanups.push(() => p.kill('SIGKILL'));
  return p;
};
const senders = ports.map((p) => play(p));
const s = (await new StreamDriver().create(
  streamResource({
    'stream-name': 'bench',
    'fallback-check': false,
    input: ports.map((port) => ({ type: 'udp', port })),
  }),
  makeHost(dir),
)) as StreamInstance;
await waitFor(() => s.state() === 'running', 5000, 'running');
const detect: number[] = [];
const first: number[] = [];
for (let i = 0; i < SWITCHES; i++) {
  const active = s.status()['activeInput'] as number;
  const other = 1 - active;
  if (!senders[other] || senders[other]!.exitCode !== null || senders[other]!.signalCode) {
    senders[other] = play(ports[other]!);
    await new Promise((r) => setTimeout(r, 1500));
  }
  const killed = performance.now();
  senders[active]!.kill('SIGKILL');
  await waitFor(() => s.status()['activeInput'] === other, 5000, 'switch');
  detect.push(performance.now() - killed);
  const last = () => (s.status()['switches'] as { firstPacketMs?: number }[]).at(-1);
  const ms = await waitFor(() => last()?.firstPacketMs, 3000, 'first packet');
  first.push(ms ?? 0);
}
await s.close();
for (const c of cleanups.reverse()) await c();
const pct = (a: number[], q: number) =>
  [...a].sort((x, y) => x - y)[Math.min(a.length - 1, Math.floor(q * a.length))]!;
const row = (name: string, a: number[]) =>
  `| ${name} | ${pct(a, 0).toFixed(0)} | ${pct(a, 0.5).toFixed(0)} | ${pct(a, 0.9).toFixed(0)} | ${pct(a, 1).toFixed(0)} |`;
const text = [
  '',
  `## Failover switch time — ${new Date().toISOString().slice(0, 10)}`,
  '',
  'Machine: 2 cores (shared). Command: `npx tsx bench/failover-switch.ts`. 20 switches between two',
  'UDP inputs (ffmpeg senders, 500 kbit/s H.264+AAC), stream-timeout 1 s (the floor of the',
  'kill → switch time; no external peer does this in-process, so the timeout is the reference).',
  '',
  '| ms | min | median | p90 | max |',
  '|---|---|---|---|---|',
  row('sender killed → switch decided (floor 1000)', detect),
  row('switch decided → first output packet', first),
  '',
].join('\n');
console.log(text);
process.exit(0);
