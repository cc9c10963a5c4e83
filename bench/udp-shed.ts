// Benchmark: N UdpReceivers at 8 Mbit/s each (bench/stream-peers.c sender, multicast on lo)
// whose onData does a fixed amount of CPU work per byte (standing in for the stream path),
// beside a busy neighbour pinned to one core: loss per receiver, by priority (= its index).
// Run: npx tsx bench/udp-shed.ts [receivers=60] [seconds=15] [work-reps-per-byte=6]
import { execFileSync, spawn } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { UdpReceiver } from '../src/native/udp.ts';
import { benchHeader } from './lib/header.ts';

const GROUP = '239.255.78.1';
const BASE = 41_000;
const MBPS_EACH = 8;

const n = Number(process.argv[2] ?? 60);
const secs = Number(process.argv[3] ?? 15);
const reps = Number(process.argv[4] ?? 6);
benchHeader('udp-shed');

const dir = mkdtempSync(join(tmpdir(), 'sluice-bench-shed-'));
const peers = join(dir, 'stream-peers');
execFileSync('cc', ['-O2', '-o', peers, join(import.meta.dirname, 'stream-peers.c')]);
const file = join(dir, 'junk.ts');
const junk = Buffer.alloc(188 * 7 * 2000);
for (let o = 0; o < junk.length; o += 188) junk[o] = 0x47;
writeFileSync(file, junk);

let sink = 0;
/** The stand-in for the stream path: `reps` passes over the batch's bytes. */
function work(b: Buffer): void {
  let s = 0;
  for (let r = 0; r < reps; r++) for (let i = 0; i < b.length; i += 4) s = (s + b[i]!) | 0;
  sink ^= s;
}

const rx: { r: UdpReceiver; delivered: number; shedEvents: number }[] = [];
for (let i = 0; i < n; i++) {
  const e = { delivered: 0, shedEvents: 0 } as (typeof rx)[number];
  e.r = new UdpReceiver({
    port: BASE + i,
    address: GROUP,
    bindIf: '127.0.0.1',
    batchLatencyMs: 20, // as the udp input
    priority: i,
    onData: (b, d) => {
      e.delivered += d;
      work(b);
    },
    onShed: () => {
      e.shedEvents++;
    },
  });
  rx.push(e);
}
const neighbour = spawn('taskset', ['-c', '0', 'sh', '-c', 'while :; do :; done']);
const sender = spawn(peers, [
  'send',
  GROUP,
  String(BASE),
  String(n),
  String(MBPS_EACH),
  String(secs),
  file,
]);
sender.stdin.end('start\n');
const cpu0 = process.cpuUsage();
await new Promise<void>((resolve) => sender.once('exit', () => resolve()));
for (let k = 0; k < 500 && rx.some((e) => e.r.stats().queued > 0); k++) {
  await new Promise((r) => setTimeout(r, 20));
}
const cpu = process.cpuUsage(cpu0);
neighbour.kill('SIGKILL');
const rows = rx.map((e, i) => {
  const s = e.r.stats();
  const got = s.datagrams + s.drops;
  return { i, lossPct: got ? (100 * (got - e.delivered)) / got : 0, s, e };
});
const lossy = rows.filter((x) => x.lossPct > 0.01);
const held = rows.filter((x) => x.lossPct <= 0.01).length;
console.log(
  `${n} × ${MBPS_EACH} Mbit/s, ${secs} s, work ${reps}/byte, neighbour on core 0: ` +
    `${held} of ${n} without loss; JS CPU ${((cpu.user + cpu.system) / 1e6 / secs).toFixed(2)} cores`,
);
for (const x of rows) {
  console.log(
    `  prio ${String(x.i).padStart(3)}: loss ${x.lossPct.toFixed(1).padStart(5)} %` +
      ` queueDrops ${x.s.queueDrops} shedBatches ${x.s.shedBatches ?? '-'} kernel ${x.s.drops}` +
      ` shed events ${x.e.shedEvents}`,
  );
}
console.log(`lossy: ${lossy.length} (sink ${sink & 1})`);
for (const e of rx) e.r.close();
rmSync(dir, { recursive: true, force: true });
