// Benchmark: UDP multicast ingest on loopback at rising rates — sluice's recvmmsg receiver
// feeding the native TS analyzer, beside a C recvmmsg receiver (bench/udp-peers.c) and Node's
// dgram, each in its own process against the same paced C sender, in the same run.
// Equal work: the C receiver wakes as sluice's receive hub does (2 ms rounds), so the ceiling
// is the same policy with the least code; it only counts, sluice also analyses.
// Run: npx tsx bench/udp-ingest.ts [seconds-per-step] [Mbit/s,…]
import { type ChildProcess, execFileSync, spawn } from 'node:child_process';
import dgram from 'node:dgram';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import { TsAnalyzer } from '../src/native/ts.ts';
import { UdpReceiver } from '../src/native/udp.ts';

const GROUP = '239.255.77.1';
const BUFFER = 8 * 1024 * 1024;

interface RecvResult {
  datagrams: number;
  cpu: number;
  analysisCpu?: number;
  /** sluice only: kernel drops (socket buffer full) and batches JS did not take in time. */
  drops?: number;
  queueDrops?: number;
}

function cpuSeconds(): number {
  const u = process.cpuUsage();
  return (u.user + u.system) / 1e6;
}

/** Child mode: receive for `secs`, print one JSON line. */
function child(kind: string, port: number, secs: number): void {
  const analyzer = new TsAnalyzer({ tr101290: true });
  let datagrams = 0;
  let analysisNs = 0n;
  const done = (close: () => void) => {
    const cpu0 = cpuSeconds(); // leave out start-up (tsx, module loading)
    setTimeout(() => {
      const stats = rx?.stats();
      close();
      const out: RecvResult = { datagrams, cpu: cpuSeconds() - cpu0 };
      if (kind === 'sluice') out.analysisCpu = Number(analysisNs) / 1e9;
      if (stats) {
        out.drops = stats.drops;
        out.queueDrops = stats.queueDrops;
      }
      console.log(JSON.stringify(out));
      process.exit(0);
    }, secs * 1000);
  };
  let rx: UdpReceiver | undefined;
  if (kind === 'sluice') {
    const r = new UdpReceiver({
      port,
      address: GROUP,
      bindIf: '127.0.0.1',
      bufferSize: BUFFER,
      onData: (batch, n) => {
        datagrams += n;
        const t0 = process.hrtime.bigint();
        analyzer.push(batch);
        analysisNs += process.hrtime.bigint() - t0;
      },
    });
    rx = r;
    console.log('ready');
    done(() => r.close());
  } else {
    const s = dgram.createSocket({ type: 'udp4', reuseAddr: true });
    s.on('message', () => {
      datagrams++;
    });
    s.bind(port, GROUP, () => {
      s.setRecvBufferSize(BUFFER);
      s.addMembership(GROUP, '127.0.0.1');
      console.log('ready');
      done(() => s.close());
    });
  }
}

function lines(cp: ChildProcess): AsyncIterator<string> {
  return createInterface({ input: cp.stdout! })[Symbol.asyncIterator]();
}

async function step(peers: string, kind: string, mbps: number, secs: number, port: number) {
  const recv =
    kind === 'c'
      ? spawn(peers, ['recv', GROUP, String(port), String(secs + 1)])
      : spawn(process.execPath, [
          '--import',
          'tsx',
          import.meta.filename,
          '--child',
          kind,
          String(port),
          String(secs + 1),
        ]);
  const it = lines(recv);
  const first = await it.next();
  if (first.value !== 'ready')
    throw new Error(`${kind} receiver did not start: ${String(first.value)}`);
  const sender = spawn(peers, ['send', GROUP, String(port), String(mbps), String(secs)]);
  const sent = JSON.parse((await lines(sender).next()).value as string) as { sent: number };
  const res = JSON.parse((await it.next()).value as string) as RecvResult;
  return { sent: sent.sent, ...res };
}

async function main(): Promise<void> {
  const secs = Number(process.argv[2] ?? 3);
  const rates = (process.argv[3] ?? '200,500,1000,2000').split(',').map(Number);
  const dir = mkdtempSync(join(tmpdir(), 'sluice-udp-bench-'));
  try {
    const peers = join(dir, 'udp-peers');
    execFileSync('cc', ['-O2', '-o', peers, join(import.meta.dirname, 'udp-peers.c')]);
    console.log(
      `UDP multicast ingest on lo, 1316-byte datagrams, ${secs} s per step, ${BUFFER} B buffers`,
    );
    console.log(
      '| Mbit/s | receiver | received % | CPU % of a core | analysis CPU % | Mbit/s per full core | × C per core | notes |',
    );
    console.log('|---|---|---|---|---|---|---|---|');
    let port = 40000 + Math.floor(Math.random() * 10000);
    for (const mbps of rates) {
      let cPerCore = 0;
      for (const kind of ['c', 'sluice', 'dgram']) {
        const r = await step(peers, kind, mbps, secs, port++);
        const pct = (100 * r.datagrams) / r.sent;
        const cpu = (100 * r.cpu) / secs;
        const got = (r.datagrams * 1316 * 8) / secs / 1e6;
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
