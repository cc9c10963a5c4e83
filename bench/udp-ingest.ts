// Benchmark: UDP multicast ingest on loopback at rising rates — sluice's recvmmsg receiver
// feeding the native TS analyzer, beside a C recvmmsg receiver (bench/udp-peers.c) and Node's
// dgram, each in its own process against the same paced C sender, in the same run.
// Equal work: the C receiver wakes as sluice's receive hub does (2 ms rounds), so the ceiling
// is the same policy with the least code; it only counts, sluice also analyses.
// Every receiver is measured from WARM_MS after its traffic starts (steady state, as in
// bench/stream-ingest.ts): CPU and datagrams from the line `start` to `stop` on its stdin.
// Run: [SLUICE_BENCH_KINDS=c,sluice,dgram] [SLUICE_BENCH_TOGETHER=1] npx tsx bench/udp-ingest.ts
//      [seconds-per-step] [Mbit/s,…]
import { type ChildProcess, execFileSync, spawn } from 'node:child_process';
import dgram from 'node:dgram';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import { TsAnalyzer } from '../src/native/ts.ts';
import { UdpReceiver } from '../src/native/udp.ts';
import { benchHeader } from './lib/header.ts';

const GROUP = '239.255.77.1';
const BUFFER = 8 * 1024 * 1024;
const DATAGRAM = 1316;
/** Traffic flows this long before the measured window opens, for every receiver: a Node
 *  process's first seconds (compiling the hot path, the memory reducer's full collections some
 *  8 s after start) are not what a running server pays per datagram. Until 2026-11-28 a 3 s
 *  step from `ready` charged them to sluice: ~20 ms of CPU against its ~120 ms at 200 Mbit/s. */
const WARM_MS = 10_000;
/** Receivers, in order (SLUICE_BENCH_KINDS, default c,sluice,dgram; `c` first for the ratio). */
const KINDS = (process.env['SLUICE_BENCH_KINDS'] ?? 'c,sluice,dgram').split(',');
/** SLUICE_BENCH_TOGETHER=1: a rate's receivers run at once on the same traffic and window (each
 *  gets a copy of every datagram), so that the ratio is paired: one after the other, the C
 *  receiver's own figure moved by half between runs at the same rate. They then share the 2
 *  cores with the sender: leave dgram out above ~500 Mbit/s (60 % of a core at 2 Gbit/s). */
const TOGETHER = process.env['SLUICE_BENCH_TOGETHER'] === '1';
/** After the sender stops, the receivers count this long before the window closes. */
const DRAIN_MS = 300;

interface RecvResult {
  /** Every datagram received (for received %), and those of the window. */
  datagrams: number;
  window: number;
  cpu: number;
  wall: number;
  analysisCpu?: number;
  /** sluice only: kernel drops (socket buffer full) and batches JS did not take in time. */
  drops?: number;
  queueDrops?: number;
}

function cpuSeconds(): number {
  const u = process.cpuUsage();
  return (u.user + u.system) / 1e6;
}

/** Child mode: receive until `stop` on stdin (or `secs`), measure from `start`; print one JSON
 *  line. */
function child(kind: string, port: number, secs: number): void {
  const analyzer = new TsAnalyzer({ tr101290: true });
  let datagrams = 0;
  let analysisNs = 0n;
  let rx: UdpReceiver | undefined;
  let close: () => void = () => undefined;
  let cpu0 = 0;
  let dg0 = 0;
  let ns0 = 0n;
  let t0 = performance.now();
  const stop = () => {
    const stats = rx?.stats();
    close();
    const out: RecvResult = {
      datagrams,
      window: datagrams - dg0,
      cpu: cpuSeconds() - cpu0,
      wall: (performance.now() - t0) / 1000,
    };
    if (kind === 'sluice') out.analysisCpu = Number(analysisNs - ns0) / 1e9;
    if (stats) {
      out.drops = stats.drops;
      out.queueDrops = stats.queueDrops;
    }
    console.log(JSON.stringify(out));
    process.exit(0);
  };
  createInterface({ input: process.stdin }).on('line', (l) => {
    if (l === 'start') {
      cpu0 = cpuSeconds();
      dg0 = datagrams;
      ns0 = analysisNs;
      t0 = performance.now();
    } else if (l === 'stop') stop();
  });
  setTimeout(stop, secs * 1000).unref();
  if (kind === 'sluice') {
    const r = new UdpReceiver({
      port,
      address: GROUP,
      bindIf: '127.0.0.1',
      bufferSize: BUFFER,
      onData: (batch, n) => {
        datagrams += n;
        const a0 = process.hrtime.bigint();
        analyzer.push(batch);
        analysisNs += process.hrtime.bigint() - a0;
      },
    });
    rx = r;
    close = () => r.close();
    console.log('ready');
  } else {
    const s = dgram.createSocket({ type: 'udp4', reuseAddr: true });
    s.on('message', () => {
      datagrams++;
    });
    close = () => s.close();
    s.bind(port, GROUP, () => {
      s.setRecvBufferSize(BUFFER);
      s.addMembership(GROUP, '127.0.0.1');
      console.log('ready');
    });
  }
}

function lines(cp: ChildProcess): AsyncIterator<string> {
  return createInterface({ input: cp.stdout! })[Symbol.asyncIterator]();
}

function startReceiver(peers: string, kind: string, secs: number, port: number): ChildProcess {
  // The receivers' own limit, past the sender and the drain: `stop` ends them before it.
  const limit = String(WARM_MS / 1000 + secs + 5);
  return kind === 'c'
    ? spawn(peers, ['recv', GROUP, String(port), limit])
    : spawn(process.execPath, [
        '--import',
        'tsx',
        import.meta.filename,
        '--child',
        kind,
        String(port),
        limit,
      ]);
}

/** One rate: the receivers of `kinds` on the same socket's traffic, one at a time or all at
 *  once (TOGETHER: each gets a copy of every datagram), each measured over the same window. */
async function step(peers: string, kinds: string[], mbps: number, secs: number, port: number) {
  const rs = kinds.map((kind) => {
    const recv = startReceiver(peers, kind, secs, port);
    return { kind, recv, it: lines(recv) };
  });
  for (const { kind, it } of rs) {
    const first = await it.next();
    if (first.value !== 'ready')
      throw new Error(`${kind} receiver did not start: ${String(first.value)}`);
  }
  const sender = spawn(peers, [
    'send',
    GROUP,
    String(port),
    String(mbps),
    String(WARM_MS / 1000 + secs),
  ]);
  const result = lines(sender).next();
  await new Promise((r) => setTimeout(r, WARM_MS));
  for (const { recv } of rs) recv.stdin?.write('start\n');
  const sent = JSON.parse((await result).value as string) as { sent: number };
  await new Promise((r) => setTimeout(r, DRAIN_MS)); // the last datagrams land
  for (const { recv } of rs) recv.stdin?.write('stop\n');
  const out: (RecvResult & { sent: number })[] = [];
  for (const { it } of rs) {
    const res = JSON.parse((await it.next()).value as string) as RecvResult;
    out.push({ sent: sent.sent, ...res });
  }
  return out;
}

async function main(): Promise<void> {
  benchHeader('udp-ingest');
  const secs = Number(process.argv[2] ?? 3);
  const rates = (process.argv[3] ?? '200,500,1000,2000').split(',').map(Number);
  const dir = mkdtempSync(join(tmpdir(), 'sluice-udp-bench-'));
  try {
    const peers = join(dir, 'udp-peers');
    execFileSync('cc', ['-O2', '-o', peers, join(import.meta.dirname, 'udp-peers.c')]);
    console.log(
      `UDP multicast ingest on lo, ${DATAGRAM}-byte datagrams, ${secs} s per step after ${WARM_MS / 1000} s of warm-up, ${BUFFER} B buffers`,
    );
    console.log(
      '| Mbit/s | receiver | received % | CPU % of a core | analysis CPU % | Mbit/s per full core | × C per core | notes |',
    );
    console.log('|---|---|---|---|---|---|---|---|');
    let port = 40000 + Math.floor(Math.random() * 10000);
    for (const mbps of rates) {
      let cPerCore = 0;
      const together = TOGETHER ? await step(peers, KINDS, mbps, secs, port++) : [];
      for (const [k, kind] of KINDS.entries()) {
        const r = TOGETHER ? together[k]! : (await step(peers, [kind], mbps, secs, port++))[0]!;
        const pct = (100 * r.datagrams) / r.sent;
        const cpu = (100 * r.cpu) / r.wall;
        const got = (r.window * DATAGRAM * 8) / r.wall / 1e6;
        const perCore = cpu > 0 ? got / (cpu / 100) : 0;
        const ana =
          r.analysisCpu === undefined
            ? ''
            : ((100 * r.analysisCpu) / r.cpu).toFixed(1) + ' % of it';
        if (kind === 'c') cPerCore = perCore;
        const ratio = kind !== 'c' && cPerCore > 0 ? (perCore / cPerCore).toFixed(2) : '';
        const notes =
          r.drops === undefined ? '' : `kernel drops ${r.drops}, queue drops ${r.queueDrops}`;
        console.log(
          `| ${mbps} | ${kind} | ${pct.toFixed(2)} | ${cpu.toFixed(0)} | ${ana} | ${perCore.toFixed(0)} | ${ratio} | ${notes} |`,
        );
      }
    }
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

if (process.argv[2] === '--child')
  child(process.argv[3]!, Number(process.argv[4]), Number(process.argv[5]));
else await main();
