// Bench: the whole box. How many 8 Mbit/s UDP channels the real server (`sluice serve`)
// ingests, packages as HLS and records to a storage at once, with no loss and an event-loop
// p99 under 10 ms; beside ffmpeg doing the same work per channel (`-c copy -f hls` into a
// directory, one process per channel) at the same count in the same run, CPU compared.
// Equal work: each side ingests the same UDP channels and writes HLS-TS segments of the same
// length; sluice also serves HTTP and keeps the archive index, which ffmpeg does not. The peer
// runs `-c copy` (no transcoding), its cheapest mode, one process per channel as operators run it.
// Loopback only; bounded in channel count and time.
// Usage: npx tsx bench/dvr-box.ts [counts=0,5,10,20,40] [seconds-per-step=15] (0 = idle baseline)
// Env: DVR_BOX_SERVER_NODE_OPTIONS (e.g. `--require ./profile-hook.cjs`) is given to the
// server as NODE_OPTIONS; DVR_BOX_NO_PEER=1 skips the ffmpeg peer (profiling runs only);
// DVR_BOX_SERVER_OUTPUT=1 prints the tail of the server's output after each step.
// DVR_BOX_WARMUP (seconds, default 30) of sending before each measured step;
// DVR_BOX_PEER_MAX: no ffmpeg peer for steps above this many channels;
// DVR_BOX_STREAM_WORKERS=N runs the server with `server.stream-workers` N (the streams in N
// worker threads: docs/architecture.md, "Stream workers"); each worker's loop is judged by
// the same goal (its p99 over the step from its histogram on /metrics; the worst second's p99
// from /data/status, sampled every second, printed beside it).
// DVR_BOX_SERVER_CPUS / DVR_BOX_SENDER_CPUS pin the server and the sender (taskset lists).
// DVR_BOX_ALL_STEPS=1 runs every step even after one fails.
// DVR_BOX_PEER_N (default the smaller of 20 and the largest step): when no step ran the peer
// (DVR_BOX_PEER_MAX below every step), one more step at this count runs both sides, so every
// run prints the peer's CPU ratio from the same run beside its own figures (0 = none).
import { type ChildProcess, execFileSync, spawn } from 'node:child_process';
import { mkdirSync, readdirSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { freePort, startServer, tempDir } from '../test/helpers/server.ts';
import { benchHeader } from './lib/header.ts';
import { loopDelayOver } from './lib/loop-delay.ts';

benchHeader('dvr-box');

const counts = (process.argv[2] ?? '0,5,10,20,40').split(',').map(Number);
const SECONDS = Number(process.argv[3] ?? 15);
/** Sending starts this long before the measured step: the live windows (the default 10
 *  segments of 2 s) fill, the first segments (grown from a 1 MiB guess) have come back to the
 *  pool and the segment memory is in steady state (pooled blocks reused) when measuring:
 *  `sluice_ott_segment_pool_allocated_total` stops growing ~25–30 s after start at 80 channels. */
const WARMUP = Number(process.env.DVR_BOX_WARMUP ?? 30);
/** Sending goes on this long after the measured step, so the step never sees the inputs stop. */
const TAIL = 3;
const MAX_CHANNELS = 300;
const MBPS = 8;
const TS_PER_DATAGRAM = 7;
const LOOP_P99_GOAL_MS = 10;
const SENDER = join(tmpdir(), 'sluice-dvr-box-send');
const STREAM_WORKERS = Number(process.env.DVR_BOX_STREAM_WORKERS ?? 0);
/** Run every step even after one fails (a scaling run wants each step's figures). */
const ALL_STEPS = process.env.DVR_BOX_ALL_STEPS === '1';
/** CPUs the server (every thread) and the sender are pinned to (`taskset` lists, e.g. `0` and
 *  `1`): how the box scales from one core to two (issue 37, goal 2). Unset: not pinned. */
const SERVER_CPUS = process.env.DVR_BOX_SERVER_CPUS ?? '';
const SENDER_CPUS = process.env.DVR_BOX_SENDER_CPUS ?? '';

const cleanups: (() => unknown)[] = [];
const t = { teardown: (fn: () => unknown) => cleanups.push(fn) };
const dir = await tempDir(t, 'sluice-dvr-box-');
execFileSync('gcc', ['-O2', '-o', SENDER, join(import.meta.dirname, 'dvr-box-send.c')]);
const media = join(dir, 'ch.ts');
// 640x360 H.264 at 7 Mbit/s + MP2, muxed to a constant 8 Mbit/s, long enough that the sender
// never loops it within a step (a loop is a CC jump ffmpeg would report as loss). Temporal noise
// on the test picture makes the encoder spend its 7 Mbit/s: a clean testsrc2 encoded to ~4.8 and
// the mux filled the rest with null packets (38 % of the stream); with noise, 9 % are null, the
// mux's own headroom (8 − 7 − 0.128 Mbit/s).
const MEDIA_SECONDS = Math.max(30, WARMUP + SECONDS + TAIL + 2);
execFileSync('ffmpeg', [
  ...[
    '-nostdin',
    '-v',
    'error',
    '-f',
    'lavfi',
    '-i',
    `testsrc2=size=640x360:rate=25:duration=${MEDIA_SECONDS}`,
  ],
  ...['-f', 'lavfi', '-i', `sine=frequency=440:sample_rate=48000:duration=${MEDIA_SECONDS}`],
  ...['-vf', 'noise=alls=24:allf=t+u'],
  ...['-c:v', 'libx264', '-preset', 'ultrafast', '-b:v', '7M', '-minrate', '7M', '-maxrate', '7M'],
  ...['-bufsize', '2M', '-g', '50', '-c:a', 'mp2', '-b:a', '128k', '-muxrate', `${MBPS}M`],
  ...['-f', 'mpegts', media],
]);

function cpuOf(pid: number): number {
  const f = readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1]!.split(' ');
  return (Number(f[11]) + Number(f[12])) / 100; // utime + stime, clock ticks of 10 ms
}

/** System CPU seconds, minor page faults, the main (event-loop) thread's CPU seconds and the
 *  stream workers' JavaScript threads' (`sluice-js-N`). */
function kernelOf(pid: number): { sys: number; faults: number; main: number; workers: number } {
  const f = readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1]!.split(' ');
  const cpuOfTask = (tid: string) => {
    const m = readFileSync(`/proc/${pid}/task/${tid}/stat`, 'utf8').split(') ')[1]!.split(' ');
    return (Number(m[11]) + Number(m[12])) / 100;
  };
  let workers = 0;
  for (const tid of readdirSync(`/proc/${pid}/task`)) {
    try {
      if (readFileSync(`/proc/${pid}/task/${tid}/comm`, 'utf8').startsWith('sluice-js-'))
        workers += cpuOfTask(tid);
    } catch {
      // the thread ended meanwhile
    }
  }
  return {
    sys: Number(f[12]) / 100,
    faults: Number(f[7]),
    main: cpuOfTask(String(pid)),
    workers,
  };
}

/** The stream workers' loops over one second each, from the server resource's status. */
async function workerLoops(url: string): Promise<{ p99: number; max: number }[]> {
  const st = (await (await fetch(`${url}/data/status`)).json()) as {
    resources?: {
      kind: string;
      status?: { workers?: { loopP99Ms: number; loopMaxMs: number }[] };
    }[];
  };
  const server = st.resources?.find((r) => r.kind === 'server');
  return (server?.status?.workers ?? []).map((w) => ({ p99: w.loopP99Ms, max: w.loopMaxMs }));
}

function send(port: number, n: number, seconds = SECONDS): Promise<number> {
  const p = spawn(SENDER_CPUS ? 'taskset' : SENDER, [
    ...(SENDER_CPUS ? ['-c', SENDER_CPUS, SENDER] : []),
    media,
    '127.0.0.1',
    String(port),
    String(n),
    String(MBPS),
    String(seconds),
  ]);
  let out = '';
  p.stdout.on('data', (d: Buffer) => {
    out += d.toString();
  });
  return new Promise((r) => p.once('exit', () => r(Number(out.trim()))));
}

interface Row {
  n: number;
  loss: number;
  p99: number;
  maxDelay: number;
  lag: number;
  recorded: number;
  /** Recorder: chunks dropped (disk too slow) or failed, and bytes written over bytes sent. */
  droppedChunks: number;
  failedChunks: number;
  writtenShare: number;
  cpu: number;
  sys: number;
  faults: number;
  main: number;
  /** The stream workers' JavaScript threads, CPU seconds; their loops' worst second. */
  workers: number;
  /** The workers' loops over the step: the largest p99 (histogram), the worst second's p99
   *  (their status figure) and the largest delay. */
  workerP99: number;
  workerWorstSecond: number;
  workerMax: number;
  rssMb: number;
  peerCpu: number;
  peerLossy: number;
}

async function sluice(n: number): Promise<Omit<Row, 'peerCpu' | 'peerLossy'>> {
  const base = await freePort();
  const nodeOptions = process.env.DVR_BOX_SERVER_NODE_OPTIONS;
  const srv = await startServer(t, {
    ...(nodeOptions ? { env: { NODE_OPTIONS: nodeOptions } } : {}),
    config: {
      ...(STREAM_WORKERS > 0 ? { server: { 'stream-workers': STREAM_WORKERS } } : {}),
      'dvr-storage-list': {
        storage: [
          {
            id: 1,
            name: 'bench',
            'dir-path': join(dir, `store-${n}`),
            'disk-emergency-bytes': 256 * 1024 * 1024,
          },
        ],
      },
      stream: Array.from({ length: n }, (_, i) => ({
        id: i + 1,
        'stream-name': `ch${i}`,
        pause: false,
        'ott-hls': 1,
        'ott-segment-duration': 2,
        'dvr-storage': 1,
        input: [{ type: 'udp', address: '127.0.0.1', port: base + i }],
      })),
    },
  });
  // Pinned before any stream starts: threads made later inherit their maker's CPUs.
  if (SERVER_CPUS) execFileSync('taskset', ['-a', '-p', '-c', SERVER_CPUS, String(srv.proc.pid)]);
  await new Promise((r) => setTimeout(r, 2000)); // inputs bound
  const get = async (p: string) =>
    (await fetch(`${srv.url}${p}`, { signal: AbortSignal.timeout(10_000) })).text();
  // The sender runs warm-up + step + a tail; the event-loop histogram and CPU are taken over the
  // step, while every channel still flows: the burst when all inputs stop at once (100 streams
  // closing segments and going to no-signal together) is not part of steady-state ingest.
  const sending = n > 0 ? send(base, n, WARMUP + SECONDS + TAIL) : Promise.resolve(0);
  if (n > 0) await new Promise((r) => setTimeout(r, WARMUP * 1000));
  const metrics0 = await get('/metrics'); // the window's start (a summary's quantiles reset here)
  const cpu0 = cpuOf(srv.proc.pid!);
  const k0 = kernelOf(srv.proc.pid!);
  // n = 0: the idle server's loop delay on this machine, the baseline for the p99 figures.
  // The workers' loops are read each second of the step (each reading covers the last one).
  let workerP99 = 0;
  let workerMax = 0;
  let workerHistP99 = 0;
  const stepEnd = Date.now() + SECONDS * 1000;
  while (Date.now() < stepEnd) {
    await new Promise((r) => setTimeout(r, Math.min(1000, Math.max(0, stepEnd - Date.now()))));
    if (STREAM_WORKERS === 0) continue;
    for (const w of await workerLoops(srv.url)) {
      workerP99 = Math.max(workerP99, w.p99);
      workerMax = Math.max(workerMax, w.max);
    }
  }
  const metrics = await get('/metrics');
  const cpu = cpuOf(srv.proc.pid!) - cpu0;
  const k1 = kernelOf(srv.proc.pid!);
  const rss = Number(
    /VmRSS:\s+(\d+)/.exec(readFileSync(`/proc/${srv.proc.pid}/status`, 'utf8'))?.[1],
  );
  const sent = await sending;
  await new Promise((r) => setTimeout(r, 1500)); // last segments close
  // The delay proper (sluice_eventloop_delay_seconds); prom-client's lag figure includes its
  // 10 ms sampling interval (an idle loop reads ~10 ms), kept beside it for comparison.
  const { p99, max: maxDelay } = loopDelayOver(metrics0, metrics);
  // Each stream worker's loop over the same window (its histogram, loop="stream-worker-N").
  for (let i = 0; i < STREAM_WORKERS; i++) {
    const w = loopDelayOver(metrics0, metrics, `stream-worker-${i}`);
    if (!Number.isNaN(w.p99)) workerHistP99 = Math.max(workerHistP99, w.p99 * 1000);
  }
  if (Number.isNaN(p99))
    throw new Error(
      `no ${'sluice_eventloop_delay_seconds'} in the server's /metrics: fix the bench's reader (bench/lib/loop-delay.ts)`,
    );
  const lag = Number(/^nodejs_eventloop_lag_p99_seconds (\S+)/m.exec(metrics)?.[1] ?? Number.NaN);
  const streams = JSON.parse(await get('/data/stream')) as {
    inputs?: { packets?: number }[];
    ott?: { dvr?: { bytes?: number; dropped?: number; failed?: number } };
  }[];
  const packets = streams.reduce((a, s) => a + (s.inputs?.[0]?.packets ?? 0), 0);
  // What the recorders really wrote, not only that they started.
  const dvr = streams.map((s) => s.ott?.dvr ?? {});
  const droppedChunks = dvr.reduce((a, d) => a + (d.dropped ?? 0), 0);
  const failedChunks = dvr.reduce((a, d) => a + (d.failed ?? 0), 0);
  const written = dvr.reduce((a, d) => a + (d.bytes ?? 0), 0);
  const list = JSON.parse(await get('/data/dvr-storage-list')) as {
    streams: { 'archived-sec': number }[];
  }[];
  const recorded = list[0]?.streams.filter((s) => s['archived-sec'] > 0).length ?? 0;
  await srv.stop();
  if (process.env.DVR_BOX_SERVER_OUTPUT === '1') console.log(srv.output());
  return {
    n,
    loss: n > 0 ? 1 - packets / (sent * TS_PER_DATAGRAM * n) : 0,
    p99: p99 * 1000,
    maxDelay: maxDelay * 1000,
    lag: lag * 1000,
    recorded,
    droppedChunks,
    failedChunks,
    // The segment still open at the end is not written yet: a little under 1 is whole.
    writtenShare: n > 0 ? written / (sent * TS_PER_DATAGRAM * 188 * n) : 1,
    cpu,
    sys: k1.sys - k0.sys,
    faults: k1.faults - k0.faults,
    main: k1.main - k0.main,
    workers: k1.workers - k0.workers,
    workerP99: STREAM_WORKERS > 0 ? workerHistP99 : 0,
    workerWorstSecond: workerP99,
    workerMax,
    rssMb: rss / 1024,
  };
}

async function peer(n: number): Promise<{ peerCpu: number; peerLossy: number }> {
  const base = await freePort();
  const procs: ChildProcess[] = [];
  const errs: string[] = [];
  for (let i = 0; i < n; i++) {
    const out = join(dir, `peer-${n}`, `ch${i}`);
    mkdirSync(out, { recursive: true });
    const p = spawn('ffmpeg', [
      ...[
        '-nostdin',
        '-v',
        'warning',
        '-i',
        `udp://127.0.0.1:${base + i}?fifo_size=1000000&overrun_nonfatal=1`,
      ],
      ...['-c', 'copy', '-f', 'hls', '-hls_time', '2', '-hls_list_size', '0'],
      join(out, 'index.m3u8'),
    ]);
    errs[i] = '';
    p.stderr.on('data', (d: Buffer) => {
      errs[i] += d.toString();
    });
    procs.push(p);
  }
  await new Promise((r) => setTimeout(r, 2000));
  const sending = send(base, n, WARMUP + SECONDS + TAIL);
  await new Promise((r) => setTimeout(r, WARMUP * 1000));
  const cpu0 = procs.reduce((a, p) => a + cpuOf(p.pid!), 0);
  await new Promise((r) => setTimeout(r, SECONDS * 1000));
  const cpu = procs.reduce((a, p) => a + cpuOf(p.pid!), 0) - cpu0;
  await sending;
  await new Promise((r) => setTimeout(r, 1500));
  // ffmpeg blocks in its UDP read once the sender stops: SIGINT, then SIGKILL.
  const exits = procs.map((p) => new Promise((r) => p.once('exit', r)));
  for (const p of procs) p.kill('SIGINT');
  const force = setTimeout(() => {
    for (const p of procs) p.kill('SIGKILL');
  }, 3000);
  await Promise.all(exits);
  clearTimeout(force);
  const lossy = errs.filter((e) => /continuity|overrun|corrupt/i.test(e)).length;
  const wrote = readdirSync(join(dir, `peer-${n}`)).filter(
    (c) => readdirSync(join(dir, `peer-${n}`, c)).filter((f) => f.endsWith('.ts')).length > 0,
  ).length;
  if (wrote < n) console.log(`  peer: only ${wrote}/${n} channels wrote segments`);
  return { peerCpu: cpu, peerLossy: lossy };
}

/** One step's line: both sides' figures and their CPU ratio. */
function report(row: Row): void {
  const { n } = row;
  const peerPart =
    row.peerCpu > 0
      ? `ffmpeg ×${n}: CPU ${((row.peerCpu / SECONDS) * 100).toFixed(0)} %, ${row.peerLossy} channels reporting loss | CPU ratio ${(row.peerCpu / row.cpu).toFixed(2)}`
      : 'no peer at this step';
  console.log(
    `${n} ch × ${MBPS} Mbit/s, ${SECONDS} s: sluice loss ${(row.loss * 100).toFixed(3)} %, loop delay p99 ${row.p99.toFixed(1)} ms (max ${row.maxDelay.toFixed(1)}; nodejs_eventloop_lag_p99 ${row.lag.toFixed(1)}), recording ${row.recorded}/${n} (${(row.writtenShare * 100).toFixed(1)} % of the bytes sent written, ${row.droppedChunks} chunks dropped, ${row.failedChunks} failed), CPU ${((row.cpu / SECONDS) * 100).toFixed(0)} % (event loop thread ${((row.main / SECONDS) * 100).toFixed(0)} %${STREAM_WORKERS > 0 ? `, ${STREAM_WORKERS} stream workers ${((row.workers / SECONDS) * 100).toFixed(0)} %, their loops' p99 ${row.workerP99.toFixed(1)} ms (worst second ${row.workerWorstSecond.toFixed(1)}, max ${row.workerMax.toFixed(1)})` : ''}, sys ${((row.sys / SECONDS) * 100).toFixed(0)} %, ${Math.round(row.faults / SECONDS)} page faults/s, RSS ${Math.round(row.rssMb)} MB) | ${peerPart}`,
  );
}

const noPeer = process.env.DVR_BOX_NO_PEER === '1';
const peerMax = Number(process.env.DVR_BOX_PEER_MAX ?? MAX_CHANNELS);
const peerN = Number(
  process.env.DVR_BOX_PEER_N ??
    Math.min(20, Math.max(0, ...counts.filter((c) => c <= MAX_CHANNELS))),
);
console.log(`media ready; steps ${counts.join(', ')} × ${SECONDS} s`);
const rows: Row[] = [];
/** The step that ran the peer (a step of the run, or the one added at DVR_BOX_PEER_N). */
let peerRow: Row | undefined;
try {
  for (const n of counts.filter((c) => c >= 0 && c <= MAX_CHANNELS)) {
    const s = await sluice(n);
    const p = n > 0 && n <= peerMax && !noPeer ? await peer(n) : { peerCpu: 0, peerLossy: 0 };
    const row = { ...s, ...p };
    rows.push(row);
    if (row.peerCpu > 0) peerRow = row;
    report(row);
    if (row.p99 >= LOOP_P99_GOAL_MS) console.log(`  loop delay p99 above ${LOOP_P99_GOAL_MS} ms`);
    if (row.workerP99 >= LOOP_P99_GOAL_MS)
      console.log(`  a stream worker's loop p99 above ${LOOP_P99_GOAL_MS} ms`);
    if (
      row.loss > 0.0001 ||
      row.recorded < n ||
      row.droppedChunks > 0 ||
      row.failedChunks > 0 ||
      row.p99 >= LOOP_P99_GOAL_MS ||
      row.workerP99 >= LOOP_P99_GOAL_MS
    ) {
      if (ALL_STEPS) continue;
      console.log(`stopping at ${n} channels: loss, a recording short or dropped, or loop p99`);
      break;
    }
  }
  // No step ran the peer: one more at a count the peer carries, both sides, so the run's
  // figures have the peer's beside them (a ratio from another run is not comparable).
  if (!peerRow && !noPeer && peerN > 0) {
    console.log(`peer step: sluice and ffmpeg at ${peerN} channels, in this run`);
    const s = await sluice(peerN);
    peerRow = { ...s, ...(await peer(peerN)) };
    report(peerRow);
  }
} finally {
  for (const fn of cleanups.reverse()) await fn();
}
// Measured, not extrapolated: the largest step that passed every check.
const passed = rows.filter(
  (r) =>
    r.n > 0 &&
    r.loss <= 0.0001 &&
    r.recorded === r.n &&
    r.droppedChunks === 0 &&
    r.failedChunks === 0 &&
    r.p99 < LOOP_P99_GOAL_MS &&
    r.workerP99 < LOOP_P99_GOAL_MS,
);
console.log(
  `largest lossless step: ${passed.length ? passed[passed.length - 1]!.n : 0} channels ` +
    `(no loss, every channel recorded with 0 dropped chunks, loop p99 < ${LOOP_P99_GOAL_MS} ms)`,
);
console.log(
  peerRow
    ? `peer in this run: at ${peerRow.n} channels ffmpeg -c copy -f hls (one process a channel) used ${((peerRow.peerCpu / SECONDS) * 100).toFixed(0)} % of a core, sluice ${((peerRow.cpu / SECONDS) * 100).toFixed(0)} %: ffmpeg ÷ sluice CPU ${(peerRow.peerCpu / peerRow.cpu).toFixed(2)}, ${peerRow.peerLossy} ffmpeg channels reporting loss`
    : 'no peer in this run (DVR_BOX_NO_PEER=1 or DVR_BOX_PEER_N=0): quote no ratio from it',
);
