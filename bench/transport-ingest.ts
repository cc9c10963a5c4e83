// Benchmark: SRT or RIST ingest on loopback, N streams of 8 Mbit/s — sluice's receive path as an
// input uses it (N SrtReceiver listeners / N RistReceivers in one process, batches handed to JS
// with the inputs' batch latency; then the same with the native TS analyzer over each batch,
// one analyzer per stream) beside the reference tools receiving
// the same N streams: N `srt-live-transmit … file://con` with stdout on /dev/null, resp. N
// `ristreceiver` writing to a UDP socket nobody reads. One C sender (bench/transport-peers.c, built
// here with cc -O2 against libsrt and librist) feeds both sides alike; the sides run one after the
// other (sluice, peer, sluice + analysis, peer) at each step so load drift hits both.
// CPU is read from /proc/<pid>/stat for both sides (all threads; the sum of the N peer processes)
// over the same window: after the connections are up and a warm-up second, while sending. Wake-ups
// are the voluntary + involuntary context switches of every thread, from /proc/<pid>/task.
// Equal work: both sides receive the same messages with the same protocol settings (SRT latency
// 200 ms; RIST recovery buffer 200 ms, RTT 50–500 ms, statistics every 500 ms). The peers also
// hand every message on (srt-live-transmit one write per 4 KiB to /dev/null, ristreceiver one
// sendto per packet to an unread socket, the cheapest sinks they have); sluice counts the
// batches in JS. The peers run as shipped, one process per stream, as operators run them.
// Run: npx tsx bench/transport-ingest.ts srt|rist [seconds-per-step] [N,N,…]
// Figures: printed; copy them to bench/RESULTS.md.
import { type ChildProcess, execFileSync, spawn } from 'node:child_process';
import dgram from 'node:dgram';
import { closeSync, mkdtempSync, openSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import { benchHeader } from './lib/header.ts';

type Protocol = 'srt' | 'rist';
type Side = 'sluice' | 'sluice+ts' | 'peer';

const MBPS_EACH = 8;
const MSG = 1316;
/** SRT latency, and RIST recovery buffer, the same on both sides (ms). */
const LATENCY_MS = 200;
/** RIST recovery RTT bounds on both sides (sluice's defaults). */
const RTT_MIN_MS = 50;
const RTT_MAX_MS = 500;
/** librist statistics interval on both sides (ms): ristreceiver prints, sluice sums. */
const RIST_STATS_MS = 500;
/** Sent before the measured window: connections settle, buffers fill. */
const WARMUP_S = 1;
/** After the sender stops, receivers deliver their buffered tail this long before counting. */
const DRAIN_MS = 1200;
/** srt-live-transmit writes stdout through stdio: up to one buffer per stream not yet written. */
const STDIO_BUFFER = 4096;
/** Bounds on every wait for a child. */
const START_TIMEOUT_MS = 15_000;
const HZ = Number(execFileSync('getconf', ['CLK_TCK'], { encoding: 'utf8' }).trim()) || 100;

/** SLUICE_BENCH_PIN=<cpu>: run the receivers of both sides on that one CPU (taskset), so the
 *  lossless step is what one core holds rather than an extrapolation. */
const PIN = process.env['SLUICE_BENCH_PIN'];

/** argv of a receiver, under taskset when pinned. */
function receiver(cmd: string, args: string[]): [string, string[]] {
  return PIN === undefined ? [cmd, args] : ['taskset', ['-c', PIN, cmd, ...args]];
}

const live = new Set<ChildProcess>();

function track(cp: ChildProcess): ChildProcess {
  live.add(cp);
  cp.on('exit', () => live.delete(cp));
  return cp;
}

/** The bench's temporary directory (the sender binary), removed at exit. */
let workDir: string | undefined;

/** Every child killed, the temporary directory removed: on return, exit and Ctrl-C. */
function cleanUp(): void {
  for (const cp of live) cp.kill('SIGKILL');
  live.clear();
  if (workDir) rmSync(workDir, { recursive: true, force: true });
  workDir = undefined;
}

// ---- the sluice child -------------------------------------------------------------------------

interface SluiceCounts {
  messages: number;
  bytes: number;
  batches: number;
  queueDrops: number;
  /** SRT: packetsLost + packetsDropped (too late) from libsrt; RIST: librist's lost. */
  lost: number;
  /** SRT: libsrt's packetsLost (gaps seen, repaired or not); RIST: librist's missing. */
  missing: number;
  analysisNs: number;
  ccErrors: number;
}

/** Child: N receivers of `proto` in listener mode; `ready`, then a JSON line on `report`. */
async function sluiceChild(proto: Protocol, analyze: boolean, ports: number[]): Promise<void> {
  const { TsAnalyzer } = await import('../src/native/ts.ts');
  const counts: SluiceCounts = {
    messages: 0,
    bytes: 0,
    batches: 0,
    queueDrops: 0,
    lost: 0,
    missing: 0,
    analysisNs: 0,
    ccErrors: 0,
  };
  let analysisNs = 0n;
  const analyzers = ports.map(() => (analyze ? new TsAnalyzer({ tr101290: true }) : undefined));
  const onData = (i: number) => (batch: Buffer, n: number) => {
    counts.messages += n;
    counts.bytes += batch.length;
    const a = analyzers[i];
    if (a) {
      const t0 = process.hrtime.bigint();
      a.push(batch);
      analysisNs += process.hrtime.bigint() - t0;
    }
  };
  const onError = (err: Error) => {
    console.error(err);
    process.exit(1);
  };
  let report: () => void;
  if (proto === 'srt') {
    const { SrtReceiver } = await import('../src/native/srt.ts');
    const { SRT_BATCH_LATENCY_MS } = await import('../src/inputs/srt/input.ts');
    const rx = ports.map(
      (port, i) =>
        new SrtReceiver({
          mode: 'listener',
          port,
          bindIf: '127.0.0.1',
          latencyMs: LATENCY_MS,
          batchLatencyMs: SRT_BATCH_LATENCY_MS, // as the srt input
          onData: onData(i),
          onError,
        }),
    );
    report = () => {
      for (const r of rx) {
        const s = r.stats();
        counts.batches += s.batches;
        counts.queueDrops += s.queueDrops;
        counts.lost += (s.packetsDropped ?? 0) + (s.packetsUndecrypted ?? 0);
        counts.missing += s.packetsLost ?? 0;
        r.close();
      }
    };
  } else {
    const { RistReceiver } = await import('../src/native/rist.ts');
    const { RIST_BATCH_LATENCY_MS } = await import('../src/inputs/rist/input.ts');
    const rx = ports.map(
      (port, i) =>
        new RistReceiver({
          profile: 1,
          peers: [{ port, intf: '127.0.0.1' }],
          bufferMs: LATENCY_MS,
          rttMinMs: RTT_MIN_MS,
          rttMaxMs: RTT_MAX_MS,
          statsIntervalMs: RIST_STATS_MS,
          batchLatencyMs: RIST_BATCH_LATENCY_MS, // as the rist input
          onData: onData(i),
          onError,
        }),
    );
    report = () => {
      for (const r of rx) {
        const s = r.stats();
        counts.batches += s.batches;
        counts.queueDrops += s.queueDrops;
        counts.lost += s.lost;
        counts.missing += s.missing;
        r.close();
      }
    };
  }
  console.log('ready');
  const rl = createInterface({ input: process.stdin });
  rl.on('line', (line) => {
    if (line !== 'report') return;
    report();
    counts.analysisNs = Number(analysisNs);
    for (const a of analyzers) if (a) counts.ccErrors += a.stats().tr101290.continuityCountError;
    console.log(JSON.stringify(counts));
    process.exit(0);
  });
  rl.on('close', () => process.exit(0)); // the parent went away
}

// ---- /proc ------------------------------------------------------------------------------------

/** CPU seconds of a process, all its threads (utime + stime). */
function procCpu(pid: number): number {
  const s = readFileSync(`/proc/${pid}/stat`, 'utf8');
  const f = s.slice(s.lastIndexOf(')') + 2).split(' ');
  return (Number(f[11]) + Number(f[12])) / HZ;
}

/** Context switches (voluntary + involuntary) of every thread of a process: its wake-ups. */
function procSwitches(pid: number): number {
  let n = 0;
  for (const tid of readdirSync(`/proc/${pid}/task`)) {
    try {
      const st = readFileSync(`/proc/${pid}/task/${tid}/status`, 'utf8');
      for (const m of st.matchAll(/ctxt_switches:\s+(\d+)/g)) n += Number(m[1]);
    } catch {
      // the thread ended meanwhile
    }
  }
  return n;
}

function procWchar(pid: number): number {
  const m = /wchar:\s+(\d+)/.exec(readFileSync(`/proc/${pid}/io`, 'utf8'));
  return m ? Number(m[1]) : 0;
}

/** The local ports of the UDP sockets bound now (IPv4). */
function udpPorts(): Set<number> {
  const ports = new Set<number>();
  for (const m of readFileSync('/proc/net/udp', 'utf8').matchAll(
    /^\s*\d+: [0-9A-F]+:([0-9A-F]{4}) /gm,
  )) {
    ports.add(Number.parseInt(m[1]!, 16));
  }
  return ports;
}

// ---- helpers ----------------------------------------------------------------------------------

class Lines {
  private readonly it: AsyncIterator<string>;
  constructor(
    cp: ChildProcess,
    private readonly what: string,
  ) {
    this.it = createInterface({ input: cp.stdout! })[Symbol.asyncIterator]();
  }

  async next(timeoutMs: number): Promise<string> {
    let timer: NodeJS.Timeout | undefined;
    const timeout = new Promise<never>((_, reject) => {
      timer = setTimeout(
        () => reject(new Error(`${this.what}: no line in ${timeoutMs} ms`)),
        timeoutMs,
      );
    });
    try {
      const r = await Promise.race([this.it.next(), timeout]);
      if (r.done) throw new Error(`${this.what} ended`);
      return r.value;
    } finally {
      clearTimeout(timer);
    }
  }
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

async function waitUntil(cond: () => boolean, ms: number, what: string): Promise<void> {
  for (const end = Date.now() + ms; !cond(); await sleep(20)) {
    if (Date.now() > end) throw new Error(`timed out: ${what}`);
  }
}

/** N distinct free UDP ports on 127.0.0.1 (bound together, then released). */
async function freePorts(n: number): Promise<number[]> {
  const socks = await Promise.all(
    Array.from(
      { length: n },
      () =>
        new Promise<dgram.Socket>((resolve) => {
          const s = dgram.createSocket('udp4');
          s.bind(0, '127.0.0.1', () => resolve(s));
        }),
    ),
  );
  const ports = socks.map((s) => s.address().port);
  await Promise.all(socks.map((s) => new Promise<void>((r) => s.close(() => r()))));
  return ports;
}

// ---- one run ----------------------------------------------------------------------------------

interface Run {
  side: Side;
  n: number;
  /** Messages each stream was sent in all, and in the measured window. */
  sent: number;
  window: number;
  seconds: number;
  cpu: number;
  switches: number;
  /** Messages received over all streams (srt-live-transmit: bytes written / 1316). */
  received: number;
  lossless: boolean;
  notes: string;
  batch?: number;
  analysisShare?: number;
}

interface Counts {
  /** Messages received over all streams. */
  received: number;
  lossless: (sentAll: number) => boolean;
  notes: string;
  /** sluice only: batches handed to JS, and the time spent in the analyzer. */
  batches?: number;
  analysisNs?: number;
}

interface Receivers {
  pids: number[];
  /** Read once, after the drain. */
  counts: () => Promise<Counts>;
}

/** A line of the C sender (bench/transport-peers.c). */
interface SenderLine {
  event: 'connected' | 'mark' | 'end' | 'stats';
  sent?: number;
  window?: number;
  seconds?: number;
  errors?: number;
  retransmitted?: number;
  senderDrops?: number;
}

async function startSluice(proto: Protocol, analyze: boolean, ports: number[]): Promise<Receivers> {
  const cp = track(
    spawn(
      ...receiver(process.execPath, [
        '--import',
        'tsx',
        import.meta.filename,
        '--child',
        proto,
        analyze ? '1' : '0',
        ports.join(','),
      ]),
      { stdio: ['pipe', 'pipe', 'inherit'] },
    ),
  );
  const lines = new Lines(cp, 'sluice child');
  const first = await lines.next(START_TIMEOUT_MS);
  if (first !== 'ready') throw new Error(`sluice child did not start: ${first}`);
  return {
    pids: [cp.pid!],
    counts: async () => {
      cp.stdin!.write('report\n');
      const c = JSON.parse(await lines.next(START_TIMEOUT_MS)) as SluiceCounts;
      const notes = [
        `${proto === 'srt' ? 'libsrt lost' : 'librist missing'} ${c.missing}`,
        `${proto === 'srt' ? 'too late' : 'lost'} ${c.lost}`,
        `queue drops ${c.queueDrops}`,
      ];
      if (analyze) notes.push(`CC errors ${c.ccErrors}`);
      return {
        received: c.messages,
        lossless: (all) =>
          c.messages === all && c.lost === 0 && c.queueDrops === 0 && c.ccErrors === 0,
        notes: notes.join(', '),
        batches: c.batches,
        analysisNs: c.analysisNs,
      };
    },
  };
}

async function startPeers(proto: Protocol, ports: number[], sink: number): Promise<Receivers> {
  const devnull = openSync('/dev/null', 'w');
  const cps = ports.map((port) =>
    proto === 'srt'
      ? track(
          spawn(
            ...receiver('srt-live-transmit', [
              '-q',
              `srt://127.0.0.1:${port}?mode=listener&latency=${LATENCY_MS}`,
              'file://con',
            ]),
            { stdio: ['ignore', devnull, 'inherit'] },
          ),
        )
      : track(
          spawn(
            ...receiver('ristreceiver', [
              '-p',
              '1',
              '-b',
              String(LATENCY_MS),
              '-S',
              String(RIST_STATS_MS),
              '-v',
              '6', // the statistics are logged at info level
              '-i',
              `rist://@127.0.0.1:${port}?rtt-min=${RTT_MIN_MS}&rtt-max=${RTT_MAX_MS}`,
              '-o',
              `udp://127.0.0.1:${sink}`,
            ]),
            { stdio: ['ignore', 'ignore', 'pipe'] },
          ),
        ),
  );
  closeSync(devnull); // the children hold their own
  // ristreceiver: the last cumulative flow statistics line of each process.
  const cumulative = cps.map(() => ({ received: 0, lost: 0, recovered: 0 }));
  if (proto === 'rist') {
    cps.forEach((cp, i) => {
      createInterface({ input: cp.stderr! }).on('line', (line) => {
        const at = line.indexOf('{"flow_cumulative_stats"');
        if (at < 0) return;
        const s = JSON.parse(line.slice(at)).flow_cumulative_stats;
        cumulative[i] = { received: s.received, lost: s.lost, recovered: s.recovered };
      });
    });
  }
  const bound = () => {
    const now = udpPorts();
    return ports.filter((p) => !now.has(p));
  };
  await waitUntil(() => bound().length === 0, START_TIMEOUT_MS, `${proto} peers listening`).catch(
    (err) => {
      const missing = bound();
      const dead = cps.filter((cp) => cp.exitCode !== null || cp.signalCode !== null).length;
      throw new Error(`${err.message}: ports ${missing.join(',')} not bound, ${dead} peers exited`);
    },
  );
  const pids = cps.map((cp) => cp.pid!);
  return {
    pids,
    counts: async () => {
      if (proto === 'srt') {
        const bytes = pids.map(procWchar);
        const total = bytes.reduce((a, b) => a + b, 0);
        return {
          received: Math.round(total / MSG),
          // stdout is written in stdio buffers: up to one buffer per stream may be pending
          lossless: (all) => bytes.every((b) => all / ports.length - b / MSG < STDIO_BUFFER / MSG),
          notes: 'written to /dev/null, counted by wchar',
        };
      }
      const received = cumulative.reduce((a, c) => a + c.received, 0);
      const lost = cumulative.reduce((a, c) => a + c.lost, 0);
      const recovered = cumulative.reduce((a, c) => a + c.recovered, 0);
      return {
        received,
        // librist's flow statistics leave out the packet that created the flow: one per stream
        lossless: (all) => received >= all - ports.length && lost === 0,
        notes: `librist recovered ${recovered}, lost ${lost}`,
      };
    },
  };
}

async function run(
  proto: Protocol,
  side: Side,
  n: number,
  secs: number,
  peersBin: string,
  sink: number,
): Promise<Run> {
  const ports = await freePorts(n);
  const rx =
    side === 'peer'
      ? await startPeers(proto, ports, sink)
      : await startSluice(proto, side === 'sluice+ts', ports);
  const sender = track(
    spawn(
      peersBin,
      [
        proto,
        ports.join(','),
        String(MBPS_EACH),
        String(WARMUP_S),
        String(secs),
        String(LATENCY_MS),
      ],
      { stdio: ['pipe', 'pipe', 'inherit'] },
    ),
  );
  try {
    const lines = new Lines(sender, `${proto} sender`);
    const expect = async (event: SenderLine['event'], ms: number) => {
      const line = JSON.parse(await lines.next(ms)) as SenderLine;
      if (line.event !== event) throw new Error(`sender: ${line.event} where ${event} was due`);
      return line;
    };
    const sample = () => ({
      cpu: rx.pids.reduce((a, p) => a + procCpu(p), 0),
      switches: rx.pids.reduce((a, p) => a + procSwitches(p), 0),
    });
    await expect('connected', START_TIMEOUT_MS);
    await expect('mark', (WARMUP_S + 5) * 1000);
    const a = sample();
    const end = await expect('end', (secs + 5) * 1000);
    const b = sample();
    const endAt = Date.now();
    const sstats = await expect('stats', 5000);
    await sleep(Math.max(0, endAt + DRAIN_MS - Date.now()));
    const c = await rx.counts();
    const sent = end.sent!;
    const all = sent * n;
    const notes = [c.notes];
    if (c.received !== all) notes.push(`received ${c.received} of ${all} messages`);
    if (end.errors) notes.push(`send errors ${end.errors}`);
    notes.push(`sender retransmitted ${sstats.retransmitted}`);
    if (sstats.senderDrops) notes.push(`sender drops ${sstats.senderDrops}`);
    const r: Run = {
      side,
      n,
      sent,
      window: end.window!,
      seconds: end.seconds!,
      cpu: b.cpu - a.cpu,
      switches: b.switches - a.switches,
      received: c.received,
      lossless: c.lossless(all) && !end.errors && !sstats.senderDrops,
      notes: notes.join('; '),
    };
    if (c.batches) r.batch = c.received / c.batches;
    if (c.analysisNs !== undefined && side === 'sluice+ts') {
      r.analysisShare = c.analysisNs / 1e9 / Math.max(1e-9, r.cpu);
    }
    return r;
  } finally {
    sender.stdin!.end();
    for (const pid of rx.pids) {
      try {
        process.kill(pid, 'SIGTERM');
      } catch {
        // already gone
      }
    }
    await waitUntil(
      () => ![...live].some((cp) => rx.pids.includes(cp.pid!) || cp === sender),
      5000,
      'children exit',
    ).catch(() => {
      for (const cp of live) if (cp === sender || rx.pids.includes(cp.pid!)) cp.kill('SIGKILL');
    });
  }
}

// ---- main -------------------------------------------------------------------------------------

/** CPU seconds per Gbit the sender sent in the window (all of it received when lossless). */
const perGbit = (r: Run) => r.cpu / ((r.window * r.n * MSG * 8) / 1e9);

async function main(): Promise<void> {
  benchHeader('transport-ingest');
  const proto = process.argv[2] as Protocol;
  if (proto !== 'srt' && proto !== 'rist') {
    console.error('usage: npx tsx bench/transport-ingest.ts srt|rist [seconds-per-step] [N,N,…]');
    process.exit(2);
  }
  const secs = Number(process.argv[3] ?? 5);
  const steps = (process.argv[4] ?? '5,10,20,40').split(',').map(Number);
  if (
    !(secs > 0 && secs <= 120) ||
    steps.some((n) => !(Number.isInteger(n) && n > 0 && n <= 500))
  ) {
    throw new Error('seconds-per-step in (0, 120], streams per step integers in [1, 500]');
  }
  const dir = mkdtempSync(join(tmpdir(), 'sluice-transport-bench-'));
  workDir = dir;
  const peersBin = join(dir, 'transport-peers');
  const flags = execFileSync('pkg-config', ['--cflags', '--libs', 'srt', 'librist'], {
    encoding: 'utf8',
  })
    .trim()
    .split(/\s+/);
  execFileSync('cc', [
    '-O2',
    '-o',
    peersBin,
    join(import.meta.dirname, 'transport-peers.c'),
    ...flags,
  ]);
  let sink = 0;
  try {
    if (proto === 'rist') {
      sink = (await freePorts(1))[0]!;
      const s = track(
        spawn(peersBin, ['sink', String(sink)], { stdio: ['pipe', 'pipe', 'inherit'] }),
      );
      await new Lines(s, 'sink').next(START_TIMEOUT_MS);
    }
    const peerName = proto === 'srt' ? 'srt-live-transmit' : 'ristreceiver';
    console.log(
      `${proto.toUpperCase()} ingest on lo: N streams of ${MBPS_EACH} Mbit/s (${MSG}-byte messages), ` +
        `${secs} s measured per run after ${WARMUP_S} s warm-up, ` +
        (proto === 'srt'
          ? `latency ${LATENCY_MS} ms both sides`
          : `main profile, recovery buffer ${LATENCY_MS} ms, RTT ${RTT_MIN_MS}–${RTT_MAX_MS} ms both sides`) +
        `; peer: N × ${peerName}` +
        (PIN === undefined ? '' : `; receivers of both sides pinned to CPU ${PIN}`),
    );
    console.log('');
    console.log(
      '| N | side | CPU % of a core | CPU s per Gbit | × peer | wake-ups/s | msgs per batch | lossless | notes |',
    );
    console.log('|---|---|---|---|---|---|---|---|---|');
    const summary: string[] = [];
    const best: Record<'sluice+ts' | 'peer', { n: number; cpu: number } | undefined> = {
      'sluice+ts': undefined,
      peer: undefined,
    };
    for (const n of steps) {
      const runs: Run[] = [];
      for (const side of ['sluice', 'peer', 'sluice+ts', 'peer'] as Side[]) {
        const r = await run(proto, side, n, secs, peersBin, sink);
        runs.push(r);
        const peerRuns = runs.filter((x) => x.side === 'peer');
        const peerRef =
          peerRuns.length > 0
            ? peerRuns.reduce((a, x) => a + perGbit(x), 0) / peerRuns.length
            : undefined;
        const ratio = r.side !== 'peer' && peerRef ? (perGbit(r) / peerRef).toFixed(2) : '';
        const ana =
          r.analysisShare === undefined
            ? ''
            : `analysis ${(100 * r.analysisShare).toFixed(1)} % of CPU; `;
        console.log(
          `| ${n} | ${side} | ${((100 * r.cpu) / r.seconds).toFixed(1)} | ${perGbit(r).toFixed(3)} | ${ratio} | ${(r.switches / r.seconds).toFixed(0)} | ${r.batch === undefined ? '' : r.batch.toFixed(1)} | ${r.lossless ? 'y' : 'n'} | ${ana}${r.notes} |`,
        );
      }
      const by = (s: Side) => runs.filter((r) => r.side === s);
      const peer = by('peer');
      const peerGbit = peer.reduce((a, r) => a + perGbit(r), 0) / peer.length;
      const sl = by('sluice')[0]!;
      const st = by('sluice+ts')[0]!;
      const yn = (r: Run[]) => r.map((x) => (x.lossless ? 'y' : 'n')).join('/');
      summary.push(
        `| ${n} | ${n * MBPS_EACH} | ${perGbit(sl).toFixed(3)} | ${perGbit(st).toFixed(3)} | ${peerGbit.toFixed(3)} | ${(perGbit(sl) / peerGbit).toFixed(2)} | ${(perGbit(st) / peerGbit).toFixed(2)} | ${yn([sl])} / ${yn([st])} / ${yn(peer)} |`,
      );
      if (st.lossless) best['sluice+ts'] = { n, cpu: st.cpu / st.seconds };
      if (peer.every((r) => r.lossless)) {
        best.peer = { n, cpu: peer.reduce((a, r) => a + r.cpu / r.seconds, 0) / peer.length };
      }
    }
    console.log('');
    console.log(
      `| N | Mbit/s total | sluice CPU s per Gbit | sluice + analysis | ${peerName} (mean of 2) | ratio | ratio with analysis | lossless sluice / + analysis / peer |`,
    );
    console.log('|---|---|---|---|---|---|---|---|');
    for (const l of summary) console.log(l);
    console.log('');
    for (const [side, b] of Object.entries(best)) {
      if (!b) continue;
      const who = side === 'peer' ? `${peerName}` : 'sluice with analysis';
      console.log(
        `Largest lossless step, ${who}: ${b.n} streams at ${(100 * b.cpu).toFixed(0)} % of a core ` +
          `→ ~${Math.floor(b.n / b.cpu)} streams of ${MBPS_EACH} Mbit/s per full core (linear)` +
          (PIN === undefined ? '' : `, pinned to CPU ${PIN}`) +
          '.',
      );
    }
  } finally {
    cleanUp();
  }
}

if (process.argv[2] === '--child') {
  await sluiceChild(
    process.argv[3] as Protocol,
    process.argv[4] === '1',
    process.argv[5]!.split(',').map(Number),
  );
} else {
  for (const sig of ['SIGINT', 'SIGTERM'] as const) {
    process.on(sig, () => {
      cleanUp();
      process.exit(130);
    });
  }
  process.on('exit', cleanUp);
  await main();
}
