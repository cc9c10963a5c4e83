// Benchmark: N multicast streams of 8 Mbit/s through the whole stream path — udp input
// (native recvmmsg receiver), TS analysis, validity, splicer, HTTP-TS fan-out to one HTTP
// client per stream (the clients run in another process) — beside a C recvmmsg+epoll receiver
// of the same N sockets and Node dgram sockets (receive and count only), and sluice's receive +
// analysis alone (`rx`: native receivers and analyzers, no stream instance), in the same run.
// bench/udp-ingest.ts (native part) measures one socket at rising rates; this one is per stream.
// Equal work for the ceiling: the C receivers (bench/stream-peers.c, cc -O2) wake as sluice's
// receive hub does (2 ms rounds, up to 256 ready sockets a round, 8 recvmmsg calls per socket
// per round), so the ratio measures the code, not the wake-up policy. Two of them:
//   `c`      reads every socket into one scratch buffer and throws the data away (the pure
//            ceiling: no receiver that hands its data on can do less);
//   `ckeep`  reads each socket straight into its own batch, packed, 64 datagrams or 20 ms a
//            batch, two batches a socket alternating — the least any receiver that hands its
//            data on must do, and what `rx` does before its analysis (the equal-work peer).
// Neither reads the data after receiving it, so `× C` of rx and of the whole path is a floor.
// Every receiver is measured from 10 s after the traffic starts (WARM_MS): the steady state.
// Streams per core count only what a receiver got: N × its received share (bytes it received ÷
// bytes the sender sent, both counted over the measured window; for the whole path, the bytes
// its HTTP clients got, when fewer) ÷ its CPU — a receiver that drops does not look cheaper.
// rx also reports its CPU per thread (`main`: the JS thread; `sluice-udp`: the receive thread).
// The goal (rx ≥ 0.5× `c` per core) is judged at 100 streams and more; at 10 streams (1–3 % of
// a core) the same receive loop costs 1.1–2× the peer's from run to run (bench/RESULTS.md).
// Run: npx tsx bench/stream-ingest.ts [seconds-per-step] [streams,…]
//      (SLUICE_BENCH_KINDS=c,ckeep,rx picks receivers; default all five;
//       SLUICE_BENCH_PIN=1/0 runs every receiver on CPU 1 and the sender on CPU 0;
//       SLUICE_BENCH_TOGETHER=1 runs a step's receivers at once on the same traffic)
import { type ChildProcess, execFileSync, spawn } from 'node:child_process';
import dgram from 'node:dgram';
import { mkdtempSync, rmSync } from 'node:fs';
import http from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import { applyDefaultsAt } from '../src/config/defaults.ts';
import { kindSchema } from '../src/config/schema.ts';
import type { StreamApplied } from '../src/config/spec-types.generated.ts';
import type { StreamInstance } from '../src/drivers/stream/instance.ts';
import { answerOtherMethod, delivers } from '../src/ott/methods.ts';
import { Services } from '../src/util/services.ts';
import { benchHeader } from './lib/header.ts';
import { sluiceNodeFlags, threadCpu } from './lib/proc.ts';
import { receivedShare, streamsPerCore } from './lib/share.ts';

const GROUP = '239.255.78.1';
const MBPS_EACH = 8;
const BUFFER = 8 * 1024 * 1024;
/** After the sender stops, receivers keep counting this long before they report. */
const DRAIN_MS = 500;
/** Traffic flows this long before the measured window opens (every receiver, the C ones too):
 *  the window is the steady state, not a Node process's first seconds — compiling the hot
 *  path, and the memory reducer's full collections of each isolate (the main one and tsx's
 *  loader thread) some 8 s after start-up, ~25 ms of CPU that a 5 s window at 10 streams
 *  charged as a fifth of the receivers' cost. */
const WARM_MS = 10_000;
/** SLUICE_BENCH_TOGETHER=1: the receivers of a step run at once on the same traffic and window
 *  (each gets a copy of every datagram), so that a ratio is taken under the same conditions:
 *  one after the other, the C peer's own figure moved by up to 1.7× between runs at 10 streams
 *  (2026-12-07). Their CPU then competes for the 2 cores; at 10 streams the whole load is a few
 *  % of a core. Not with `sluice` (its HTTP clients would share the window too). */
const TOGETHER = process.env['SLUICE_BENCH_TOGETHER'] === '1';
/** Receivers to run (default all five; e.g. `sluice` alone while profiling). */
const KINDS = (process.env['SLUICE_BENCH_KINDS'] ?? 'c,ckeep,rx,sluice,dgram').split(',');

function cpuSeconds(): number {
  const u = process.cpuUsage();
  return (u.user + u.system) / 1e6;
}

/** Child: the sluice stream path for N streams; prints `ready <http port>`, then results. */
async function sluiceChild(base: number, n: number): Promise<void> {
  // Loaded here only: the peer children stay free of the server's module graph.
  const { default: Fastify } = await import('fastify');
  const { OTT_ROUTER_SERVICE, OttRouter } = await import('../src/ott/router.ts');
  const { StreamDriver } = await import('../src/drivers/stream/driver.ts');
  const { silentLogger } = await import('../src/log.ts');
  const { systemClock } = await import('../src/util/clock.ts');
  const router = new OttRouter();
  const host = {
    log: silentLogger,
    clock: systemClock,
    dataDir: mkdtempSync(join(tmpdir(), 'sluice-bench-')),
    lookup: () => undefined,
    services: new Services().set(OTT_ROUTER_SERVICE, router),
  };
  const app = Fastify();
  app.get('/:name/*', (req, reply) => {
    const { name, '*': rest } = req.params as { name: string; '*': string };
    const h = router.lookup(name);
    if (!h) return reply.code(404).send({ status: 404, message: 'no such stream' });
    return delivers(req) ? h(req, reply, rest) : answerOtherMethod(req, reply);
  });
  await app.listen({ port: 0, host: '127.0.0.1' });
  const driver = new StreamDriver();
  const streams: StreamInstance[] = [];
  for (let i = 0; i < n; i++) {
    const spec = {
      id: i + 1,
      'stream-name': `s${i}`,
      pause: false,
      'ott-http': 1,
      input: [{ type: 'udp', address: GROUP, port: base + i, 'bind-if': '127.0.0.1' }],
    };
    const res = {
      kind: 'stream' as const,
      key: String(i + 1),
      name: `s${i}`,
      pointer: '',
      spec: applyDefaultsAt(kindSchema('stream'), spec) as StreamApplied,
      deps: [],
    };
    streams.push((await driver.create(res, host)) as StreamInstance);
  }
  const addr = app.server.address() as { port: number };
  console.log(`ready ${addr.port}`);
  const inputBytes = () => {
    let b = 0;
    for (const s of streams) b += Number(transportOf(s.status())['bytes'] ?? 0);
    return b;
  };
  let cpu0 = 0;
  let bytes0 = 0;
  onCommands(
    () => {
      bytes0 = inputBytes(); // before the CPU mark: reading every status is not the path's work
      cpu0 = cpuSeconds();
    },
    async (wall) => {
      const cpu = cpuSeconds() - cpu0;
      const bytes = inputBytes() - bytes0;
      let datagrams = 0;
      let drops = 0;
      let queueDrops = 0;
      let running = 0;
      let clients = 0;
      let silent = 0;
      let slowDropped = 0;
      for (const s of streams) {
        const st = s.status();
        const tr = transportOf(st);
        const rx = (tr['receiver'] ?? {}) as Record<string, number>;
        datagrams += Number(tr['datagrams'] ?? 0);
        if (!tr['datagrams']) silent++;
        drops += rx['drops'] ?? 0;
        queueDrops += rx['queueDrops'] ?? 0;
        if (st['state'] === 'running') running++;
        const h = st['httpTs'] as { clients: number; dropped: number };
        clients += h.clients;
        slowDropped += h.dropped;
      }
      console.log(
        JSON.stringify({
          datagrams,
          bytes,
          drops,
          queueDrops,
          running,
          clients,
          silent,
          slowDropped,
          cpu,
          wall,
        }),
      );
      await Promise.all(streams.map((s) => s.close()));
      await app.close();
      rmSync(host.dataDir, { recursive: true, force: true });
      process.exit(0);
    },
  );
}

/** The udp input's status of a stream (its counters: datagrams, bytes, receiver). */
function transportOf(status: Record<string, unknown>): Record<string, unknown> {
  const inputs = status['inputs'] as { transport?: Record<string, unknown> }[];
  return inputs[0]?.transport ?? {};
}

/** A child measures between the parent's `start` and `stop` lines on its stdin. */
function onCommands(start: () => void, stop: (wall: number) => void | Promise<void>): void {
  let t0 = 0;
  createInterface({ input: process.stdin }).on('line', (l) => {
    if (l === 'start') {
      t0 = performance.now();
      start();
    } else if (l === 'stop') void stop((performance.now() - t0) / 1000);
    else if (l === 'exit') process.exit(0);
  });
}

/** Child: one HTTP-TS client per stream; prints `ready`, then the bytes they received. */
function clientsChild(port: number, n: number): void {
  let bytes = 0;
  let connected = 0;
  const reqs = Array.from({ length: n }, (_, i) =>
    http.get(`http://127.0.0.1:${port}/s${i}/mpegts`, (res) => {
      if (++connected === n) console.log('ready');
      res.on('data', (d: Buffer) => {
        bytes += d.length;
      });
    }),
  );
  for (const r of reqs) r.on('error', () => undefined);
  // The bytes of the measured window, as the inputs' and the sender's.
  let bytes0 = 0;
  onCommands(
    () => {
      bytes0 = bytes;
    },
    (wall) => {
      console.log(JSON.stringify({ bytes: bytes - bytes0, wall }));
      // stay connected until `exit`: the server counts its clients after this
    },
  );
}

/** Child: sluice's receive + analysis only — N native UdpReceivers (the shared receive thread)
 *  each feeding its own TsAnalyzer (TR 101 290, all sections taken), no stream instance, no
 *  HTTP: the part comparable with the C receiver plus the analysis the issue asks for. */
async function rxChild(base: number, n: number): Promise<void> {
  const { UdpReceiver } = await import('../src/native/udp.ts');
  const { TsAnalyzer } = await import('../src/native/ts.ts');
  let datagrams = 0;
  let bytes = 0;
  let drops = 0;
  const rx = Array.from({ length: n }, (_, i) => {
    const a = new TsAnalyzer({ tr101290: true, psiPids: 'all' });
    return new UdpReceiver({
      port: base + i,
      address: GROUP,
      bindIf: '127.0.0.1',
      bufferSize: BUFFER,
      batchLatencyMs: 20, // as the udp input
      onData: (batch, count) => {
        datagrams += count;
        bytes += batch.length;
        a.push(batch);
        a.takeSections();
      },
    });
  });
  console.log('ready');
  let cpu0 = 0;
  let bytes0 = 0;
  let threads0 = new Map<string, number>();
  onCommands(
    () => {
      cpu0 = cpuSeconds();
      bytes0 = bytes;
      threads0 = threadCpu(process.pid);
    },
    (wall) => {
      const cpu = cpuSeconds() - cpu0;
      for (const r of rx) drops += r.stats().drops;
      // CPU seconds per thread over the window: `main` (JS), `sluice-udp` (the receive
      // thread), `node` (V8's and libuv's workers), in jiffies (10 ms).
      const threads: Record<string, number> = {};
      for (const [name, s] of threadCpu(process.pid)) threads[name] = s - (threads0.get(name) ?? 0);
      console.log(JSON.stringify({ datagrams, bytes: bytes - bytes0, drops, cpu, wall, threads }));
      for (const r of rx) r.close();
      process.exit(0);
    },
  );
}

/** Child: N Node dgram sockets, receive and count only. */
function dgramChild(base: number, n: number): void {
  let datagrams = 0;
  let bytes = 0;
  let bound = 0;
  for (let i = 0; i < n; i++) {
    const s = dgram.createSocket({ type: 'udp4', reuseAddr: true });
    s.on('message', (msg) => {
      datagrams++;
      bytes += msg.length;
    });
    s.bind(base + i, GROUP, () => {
      s.setRecvBufferSize(BUFFER);
      s.addMembership(GROUP, '127.0.0.1');
      if (++bound === n) console.log('ready');
    });
  }
  let cpu0 = 0;
  let bytes0 = 0;
  onCommands(
    () => {
      cpu0 = cpuSeconds();
      bytes0 = bytes;
    },
    (wall) => {
      console.log(
        JSON.stringify({ datagrams, bytes: bytes - bytes0, cpu: cpuSeconds() - cpu0, wall }),
      );
      process.exit(0);
    },
  );
}

function lines(cp: ChildProcess): AsyncIterator<string> {
  return createInterface({ input: cp.stdout! })[Symbol.asyncIterator]();
}

/** SLUICE_BENCH_PIN=<receiver cpus>/<sender cpus> (taskset lists, e.g. `1/0`): every receiver
 *  — the C peers and sluice's children alike — runs on the first set, the sender on the second,
 *  so that placement (which core the kernel frees a loopback buffer on, whether a thread
 *  migrates) is the same for both sides. Unset: the scheduler places them. */
const PIN = (process.env['SLUICE_BENCH_PIN'] ?? '').split('/');

/** `cmd args` on the CPUs of PIN[which] when pinning is asked for. */
function pinned(which: 0 | 1, cmd: string, args: string[]): [string, string[]] {
  const cpus = PIN[which];
  return cpus ? ['taskset', ['-c', cpus, cmd, ...args]] : [cmd, args];
}

function tsxChild(args: string[]): ChildProcess {
  // SLUICE_BENCH_NODE_FLAGS for the sluice and rx children only: the peers stay unprofiled.
  const flags = args[0] === 'sluice' || args[0] === 'rx' ? sluiceNodeFlags : [];
  // The HTTP clients are the sender's side of the bench, not a receiver.
  const [cmd, argv] = pinned(args[0] === 'clients' ? 1 : 0, process.execPath, [
    ...flags,
    '--import',
    'tsx',
    import.meta.filename,
    '--child',
    ...args,
  ]);
  return spawn(cmd, argv, { stdio: ['pipe', 'pipe', 'inherit'] });
}

interface StepResult {
  sent: number;
  datagrams: number;
  /** Bytes sent and received over the measured window. */
  sentBytes: number;
  bytes: number;
  cpu: number;
  /** Seconds the receiver measured over. */
  wall: number;
  extra?: Record<string, number>;
  /** rx: CPU seconds per thread name over the window. */
  threads?: Record<string, number>;
}

/** A receiver child's closing line: every kind gives datagrams, CPU and wall time; rx adds its
 *  drops and threads, the sluice child its stream figures. */
interface ChildReport {
  datagrams: number;
  bytes: number;
  cpu: number;
  wall?: number;
  threads?: Record<string, number>;
  drops?: number;
  queueDrops?: number;
  running?: number;
  clients?: number;
  silent?: number;
  slowDropped?: number;
}

/** One receiver of a step, started and ready. */
interface Receiver {
  kind: string;
  recv: ChildProcess;
  it: AsyncIterator<string>;
  clients: ChildProcess | null;
  clientIt: AsyncIterator<string> | null;
}

async function startReceiver(
  peers: string,
  kind: string,
  n: number,
  secs: number,
  base: number,
): Promise<Receiver> {
  const recvSecs = WARM_MS / 1000 + secs + 1;
  const recv =
    kind === 'c' || kind === 'ckeep'
      ? spawn(
          ...pinned(0, peers, [
            'recv',
            GROUP,
            String(base),
            String(n),
            String(recvSecs),
            ...(kind === 'ckeep' ? ['keep'] : []),
          ]),
        )
      : tsxChild([kind, String(base), String(n)]);
  const it = lines(recv);
  const first = String((await it.next()).value);
  if (!first.startsWith('ready')) throw new Error(`${kind} receiver did not start: ${first}`);
  let clients: ChildProcess | null = null;
  let clientIt: AsyncIterator<string> | null = null;
  if (kind === 'sluice') {
    clients = tsxChild(['clients', first.split(' ')[1]!, String(n)]);
    clientIt = lines(clients);
    const ok = String((await clientIt.next()).value);
    if (ok !== 'ready') throw new Error(`clients did not connect: ${ok}`);
  }
  return { kind, recv, it, clients, clientIt };
}

/** One step: the receivers of `kinds` on the same N sockets' traffic — one after the other, or
 *  all at once (TOGETHER: every one joins the same groups and ports, and multicast gives each a
 *  copy of every datagram) — measured over the same window after WARM_MS. */
async function step(
  peers: string,
  file: string,
  kinds: string[],
  n: number,
  secs: number,
  base: number,
): Promise<StepResult[]> {
  const rs: Receiver[] = [];
  for (const kind of kinds) rs.push(await startReceiver(peers, kind, n, secs, base));
  const tell = (cmd: string) => {
    if (cmd === 'start') sender.stdin?.write('start\n');
    for (const r of rs) {
      r.recv.stdin?.write(`${cmd}\n`);
      r.clients?.stdin?.write(`${cmd}\n`);
    }
  };
  const sender = spawn(
    ...pinned(1, peers, [
      'send',
      GROUP,
      String(base),
      String(n),
      String(MBPS_EACH),
      String(WARM_MS / 1000 + secs),
      file,
    ]),
  );
  const result = lines(sender).next();
  await new Promise((r) => setTimeout(r, WARM_MS));
  tell('start');
  const sent = JSON.parse(String((await result).value)) as { sent: number; bytes: number };
  await new Promise((r) => setTimeout(r, DRAIN_MS)); // the last datagrams and HTTP bytes land
  tell('stop');
  const outs: StepResult[] = [];
  for (const { kind, it, clients, clientIt } of rs) {
    const res = JSON.parse(String((await it.next()).value)) as ChildReport;
    clients?.stdin?.write('exit\n'); // after the server has counted its clients
    const out: StepResult = {
      sent: sent.sent,
      datagrams: res.datagrams,
      sentBytes: sent.bytes,
      bytes: res.bytes,
      cpu: res.cpu,
      wall: res.wall ?? WARM_MS / 1000 + secs + 1,
    };
    if (kind === 'rx') {
      out.extra = { drops: res.drops ?? 0 };
      out.threads = res.threads;
    }
    if (clientIt) {
      const c = JSON.parse(String((await clientIt.next()).value)) as {
        bytes: number;
        wall: number;
      };
      out.extra = {
        httpBytes: c.bytes,
        drops: res.drops ?? 0,
        queueDrops: res.queueDrops ?? 0,
        running: res.running ?? 0,
        clients: res.clients ?? 0,
        silent: res.silent ?? 0,
        slowDropped: res.slowDropped ?? 0,
      };
    }
    outs.push(out);
  }
  return outs;
}

function makeSource(dir: string): string {
  const file = join(dir, 'src.ts');
  execFileSync('ffmpeg', [
    '-hide_banner',
    '-loglevel',
    'error',
    '-f',
    'lavfi',
    '-i',
    'testsrc2=size=640x360:rate=25:duration=8',
    '-f',
    'lavfi',
    '-i',
    'sine=frequency=440:sample_rate=48000:duration=8',
    '-c:v',
    'libx264',
    '-preset',
    'ultrafast',
    '-g',
    '25',
    '-b:v',
    '6M',
    '-minrate',
    '6M',
    '-maxrate',
    '6M',
    '-bufsize',
    '2M',
    '-c:a',
    'aac',
    '-muxrate',
    `${MBPS_EACH}M`,
    '-f',
    'mpegts',
    file,
  ]);
  return file;
}

async function main(): Promise<void> {
  benchHeader('stream-ingest');
  const secs = Number(process.argv[2] ?? 5);
  const counts = (process.argv[3] ?? '10,25,50,100').split(',').map(Number);
  if (TOGETHER && KINDS.includes('sluice')) {
    throw new Error('SLUICE_BENCH_TOGETHER=1 runs c, ckeep, rx and dgram, not sluice');
  }
  const dir = mkdtempSync(join(tmpdir(), 'sluice-stream-bench-'));
  try {
    const peers = join(dir, 'stream-peers');
    execFileSync('cc', ['-O2', '-o', peers, join(import.meta.dirname, 'stream-peers.c')]);
    const file = makeSource(dir);
    console.log(
      `${MBPS_EACH} Mbit/s multicast streams on lo (ffmpeg H.264+AAC TS, muxrate ${MBPS_EACH}M), ${secs} s per step`,
    );
    console.log(
      '| streams | Gbit/s | receiver | received share % (bytes, window) | CPU % of a core | streams per full core × received share | × C per core | × C keeping batches | HTTP-TS delivered % | notes |',
    );
    console.log('|---|---|---|---|---|---|---|---|---|---|');
    let base = 30000 + Math.floor(Math.random() * 20000);
    for (const n of counts) {
      let cPerCore = 0;
      let keepPerCore = 0;
      const results = TOGETHER ? await step(peers, file, KINDS, n, secs, base) : [];
      for (const [k, kind] of KINDS.entries()) {
        const r = TOGETHER ? results[k]! : (await step(peers, file, [kind], n, secs, base))[0]!;
        base += n;
        const received = receivedShare(r.bytes, r.sentBytes);
        // The whole path carried what reached its HTTP clients (same window), when that is less.
        const httpBytes = kind === 'sluice' ? (r.extra?.['httpBytes'] ?? 0) : undefined;
        const share =
          httpBytes === undefined
            ? received
            : Math.min(received, receivedShare(httpBytes, r.sentBytes));
        const cpu = (100 * r.cpu) / r.wall;
        const perCore = streamsPerCore(n, cpu, share);
        const gbps = (n * MBPS_EACH) / 1000;
        if (kind === 'c') cPerCore = perCore;
        if (kind === 'ckeep') keepPerCore = perCore;
        const peer = kind === 'c' || kind === 'ckeep';
        const ratio = !peer && cPerCore > 0 ? (perCore / cPerCore).toFixed(2) : '';
        const keepRatio = !peer && keepPerCore > 0 ? (perCore / keepPerCore).toFixed(2) : '';
        // Bytes the HTTP clients got over the bytes the inputs received (same window).
        const http =
          httpBytes === undefined ? '' : (100 * receivedShare(httpBytes, r.bytes)).toFixed(2);
        const notes =
          kind === 'sluice' && r.extra
            ? `kernel drops ${r.extra['drops']}, queue drops ${r.extra['queueDrops']}, running ${r.extra['running']}/${n}, clients ${r.extra['clients']} (${r.extra['slowDropped']} dropped as slow), silent ${r.extra['silent']}`
            : kind === 'rx' && r.extra
              ? `kernel drops ${r.extra['drops']}; CPU % per thread: ${Object.entries(
                  r.threads ?? {},
                )
                  .filter(([, v]) => v > 0)
                  .map(([k, v]) => `${k} ${((100 * v) / r.wall).toFixed(2)}`)
                  .join(', ')}`
              : '';
        console.log(
          `| ${n} | ${gbps.toFixed(2)} | ${kind} | ${(100 * received).toFixed(2)} | ${cpu.toFixed(1)} | ${perCore.toFixed(0)} | ${ratio} | ${keepRatio} | ${http} | ${notes} |`,
        );
      }
    }
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

if (process.argv[2] === '--child') {
  const [kind, a, b] = process.argv.slice(3);
  if (kind === 'sluice') await sluiceChild(Number(a), Number(b));
  else if (kind === 'clients') clientsChild(Number(a), Number(b));
  else if (kind === 'rx') await rxChild(Number(a), Number(b));
  else dgramChild(Number(a), Number(b));
} else await main();
