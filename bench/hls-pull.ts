// Benchmark: HLS pull of N live streams into MPEG-TS — sluice's `hls` input (N inputs in one
// process: playlist reload about every target duration, media-sequence tracking, segments
// fetched over HTTP/1.1 keep-alive, TS checked and handed on at real time by its PCR to a sink
// that counts it) beside N `ffmpeg -i http://…/index.m3u8 -c copy -f mpegts /dev/null` doing
// the same N (ffmpeg's HLS demuxer: the same reloads and fetches, its TS demuxed and muxed
// again as fast as it arrives). Both sides join each live playlist 3 segments from its end and
// then take every new segment once: the same playlists and segment bytes fetched from the same
// origin, the same audio and video delivered as TS — the work is equal (sluice passes the
// segments' TS on and paces it, as its inputs do; ffmpeg demuxes and muxes it again and writes
// it as it comes; neither is charged for the origin).
// sluice runs as two children, measured in turn each round: one paced on the 100 ms grid, as a stream read by HTTP-TS clients,
// the packager and the DVR is ("bursts"), one on the 20 ms grid, as one with a UDP output is
// ("smooth"; src/mpegts/pcr-pacer.ts). The goal is read on each. ffmpeg runs twice too: as
// above (no pacing at all: each segment written as fast as it comes, which a reader that takes
// bursts can live with), and with `-re` (reading at the media's rate: what a push output needs
// and the 20 ms grid gives), the peer for the smooth side.
// The origin is nginx serving one directory (our own child, temporary prefix, `master_process
// off`, sendfile on), fed by N `ffmpeg -re -stream_loop -1 -i src.ts -c copy -f hls` writers
// (2 s segments, 6 in the playlist, old ones deleted) of one 2 Mbit/s H.264 + AAC file;
// origin and writers run for both sides alike and are not measured.
// CPU: utime + stime from /proc/<pid>/stat (the sluice child; the sum of the N ffmpeg
// processes) over windows of the same length, each side in its steady state: the two sluice
// children (one per grid) start together, pull for SLUICE_BENCH_JIT_S before their first
// window and run to the end; each ffmpeg side starts afresh, SLUICE_BENCH_WARMUP_S before its
// window. The windows alternate (sluice 100 ms, ffmpeg, sluice 20 ms, ffmpeg -re) for each
// round so load drift hits both; the sluice children keep pulling through ffmpeg's windows
// (~1.5 % of a core each, beside the origin's writers).
// Run: [SLUICE_BENCH_JIT_S=180] [SLUICE_BENCH_WARMUP_S=12] [SLUICE_BENCH_PROF=dir] [SLUICE_BENCH_NODE_FLAGS=…] npx tsx bench/hls-pull.ts [N=8] [seconds=20] [rounds=2]
// Figures: printed; copy them to bench/RESULTS.md.
import { type ChildProcess, execFileSync, spawn } from 'node:child_process';
import { mkdirSync, mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import { benchHeader } from './lib/header.ts';
import { BenchProcs, freePort, procCpu, sleep, sluiceNodeFlags, threadCpu } from './lib/proc.ts';

/** Before each ffmpeg window (SLUICE_BENCH_WARMUP_S, default 12): connections up and the
 *  segments of the join (3 at once) fetched. (The sluice children wait JIT_MS, which also
 *  covers V8's memory reducer: full collections of both isolates about 8 s after start,
 *  `--trace-gc`, 2026-11-28.) */
const WARMUP_MS = Number(process.env['SLUICE_BENCH_WARMUP_S'] ?? 12) * 1000;
/** Before the sluice children's first window (SLUICE_BENCH_JIT_S, default 180): their code
 *  optimised. At this load each function runs a few times a second, so V8 tiers the input's
 *  functions up one by one for minutes (`--log-code`, 32 pulls: ~20 optimisations per 20 s
 *  until 100 s, 2–4 after 140 s); with 12 s of warm-up a third of the window's CPU was the
 *  optimising compiler's threads (perf, 2026-12-07), a one-off a running server pays once, as
 *  ffmpeg's start-up, which the bench does not charge either. */
const JIT_MS = Number(process.env['SLUICE_BENCH_JIT_S'] ?? 180) * 1000;
const SEGMENT_S = 2;
/** SLUICE_BENCH_PROF=<dir>: the sluice child writes a V8 CPU profile there. */
const PROF = process.env['SLUICE_BENCH_PROF']
  ? ['--cpu-prof', '--cpu-prof-dir', process.env['SLUICE_BENCH_PROF']]
  : [];
const procs = new BenchProcs();
const track = (cp: ChildProcess) => procs.track(cp);
const cleanUp = () => procs.cleanUp();

/** Child: N hls inputs pulling http://127.0.0.1:port/s<i>/index.m3u8; prints `ready` once
 *  every input delivered TS, then on `report` a JSON line of TS bytes and segments. */
async function child(port: number, n: number, smooth: boolean): Promise<void> {
  const { HlsInput } = await import('../src/inputs/hls/input.ts');
  const { silentLogger } = await import('../src/log.ts');
  const { systemClock } = await import('../src/util/clock.ts');
  const bytes = new Array<number>(n).fill(0);
  const inputs = Array.from({ length: n }, (_, i) => {
    const inp = new HlsInput(
      { uri: `http://127.0.0.1:${port}/s${i}/index.m3u8`, 'client-timeout': 10 },
      {
        log: silentLogger,
        clock: systemClock,
        dataDir: tmpdir(),
        streamName: `s${i}`,
        index: 0,
        onData: (b: Buffer) => {
          bytes[i]! += b.length;
        },
        bus: () => undefined,
        smooth: () => smooth,
      },
    );
    inp.start();
    return inp;
  });
  while (bytes.some((b) => b === 0)) await sleep(50);
  // Garbage collections from here on, by kind (V8's major ones are driven by external memory:
  // socket reads and segment bodies).
  const gc = { major: 0, minor: 0, ms: 0 };
  const { PerformanceObserver, constants } = await import('node:perf_hooks');
  new PerformanceObserver((list) => {
    for (const e of list.getEntries()) {
      const kind = (e as unknown as { detail?: { kind?: number } }).detail?.kind;
      if (kind === constants.NODE_PERFORMANCE_GC_MAJOR) gc.major++;
      else gc.minor++;
      gc.ms += e.duration;
    }
  }).observe({ entryTypes: ['gc'] });
  console.log('ready');
  createInterface({ input: process.stdin }).on('line', (line) => {
    if (line !== 'report') return;
    let segments = 0;
    let errors = 0;
    for (const inp of inputs) {
      const s = inp.status() as Record<string, number>;
      segments += s['segments'] ?? 0;
      errors += (s['notFound'] ?? 0) + (s['segmentErrors'] ?? 0) + (s['reloadErrors'] ?? 0);
    }
    gc.ms = Math.round(gc.ms);
    console.log(
      JSON.stringify({ tsBytes: bytes.reduce((a, b) => a + b, 0), segments, errors, gc }),
    );
    process.exit(0);
  });
}

/** The child's answers (`ready`, a JSON line) in order; any other line it prints (a V8 trace
 *  asked for by SLUICE_BENCH_NODE_FLAGS) goes to stderr, read as it comes so the pipe never
 *  fills. */
function childLines(cp: ChildProcess, tag: string): { next(): Promise<string> } {
  const got: string[] = [];
  const waiting: ((line: string) => void)[] = [];
  createInterface({ input: cp.stdout! }).on('line', (line) => {
    if (line !== 'ready' && !line.startsWith('{'))
      return void process.stderr.write(`[${tag}] ${line}\n`);
    const w = waiting.shift();
    if (w) w(line);
    else got.push(line);
  });
  cp.once('exit', (code) => {
    for (const w of waiting.splice(0)) w(`exited with ${code}`);
  });
  return {
    next: () =>
      got.length
        ? Promise.resolve(got.shift()!)
        : new Promise<string>((res) => {
            if (cp.exitCode !== null) res(`exited with ${cp.exitCode}`);
            else waiting.push(res);
          }),
  };
}

interface SluiceChild {
  grid: 'bursts' | 'smooth';
  cp: ChildProcess;
  lines: { next(): Promise<string> };
}

/** A sluice child pulling the N streams on `grid`, resolved once every input delivered. */
async function startSluice(
  port: number,
  n: number,
  grid: 'bursts' | 'smooth',
): Promise<SluiceChild> {
  const cp = track(
    spawn(
      process.execPath,
      [
        ...PROF,
        ...sluiceNodeFlags,
        '--import',
        'tsx',
        import.meta.filename,
        'child',
        String(port),
        String(n),
        grid,
      ],
      {
        stdio: ['pipe', 'pipe', 'inherit'],
      },
    ),
  );
  const lines = childLines(cp, grid);
  const first = await lines.next();
  if (first !== 'ready') throw new Error(`sluice child: ${first}`);
  return { grid, cp, lines };
}

/** One measured window of a running sluice child: its CPU seconds. */
async function sluiceWindow(child: SluiceChild, seconds: number): Promise<number> {
  const { cp, grid } = child;
  console.log(`  sluice, ${grid === 'bursts' ? '100' : '20'} ms grid (${grid}):`);
  if (cp.exitCode !== null) throw new Error(`sluice child (${grid}) exited with ${cp.exitCode}`);
  const c0 = procCpu(cp.pid!);
  const k0 = procCpu(cp.pid!, true);
  const t0 = threadCpu(cp.pid!);
  await sleep(seconds * 1000);
  const t1 = threadCpu(cp.pid!);
  const threads = [...t1]
    .map(([name, v]) => [name, v - (t0.get(name) ?? 0)] as const)
    .filter(([, v]) => v > 0)
    .map(([name, v]) => `${name} ${v.toFixed(2)}`);
  console.log(`  sluice threads (s): ${threads.join(', ')}`);
  const cpu = procCpu(cp.pid!) - c0;
  const sys = procCpu(cp.pid!, true) - k0;
  console.log(`  sluice: ${cpu.toFixed(2)} s CPU, of which system ${sys.toFixed(2)} s`);
  return cpu;
}

/** The child's totals since it was ready (segments, errors, collections), then its exit. */
async function stopSluice(child: SluiceChild): Promise<void> {
  const { cp, lines, grid } = child;
  cp.stdin!.write('report\n');
  console.log(`  sluice (${grid}), since ready: ${await lines.next()}`);
  const exited = new Promise((res) => cp.once('exit', res));
  const timer = setTimeout(() => cp.kill('SIGKILL'), 5000);
  await exited;
  clearTimeout(timer);
}

/** N ffmpeg pulls; `paced`: with `-re` (reads at the media's rate, as sluice's pacer hands it
 *  on), the peer doing what the 20 ms grid does for a push output. */
async function ffmpegSide(
  port: number,
  n: number,
  seconds: number,
  paced = false,
): Promise<number> {
  if (paced) console.log('  ffmpeg -re:');
  const procs = Array.from({ length: n }, (_, i) =>
    track(
      spawn(
        'ffmpeg',
        [
          ...['-hide_banner', '-loglevel', 'error', '-nostats'],
          ...(paced ? ['-re'] : []),
          ...[
            '-i',
            `http://127.0.0.1:${port}/s${i}/index.m3u8`,
            '-c',
            'copy',
            '-f',
            'mpegts',
            '-y',
            '/dev/null',
          ],
        ],
        { stdio: 'ignore' },
      ),
    ),
  );
  await sleep(WARMUP_MS);
  const c0 = procs.map((p) => procCpu(p.pid!));
  const k0 = procs.map((p) => procCpu(p.pid!, true));
  await sleep(seconds * 1000);
  const cpu = procs.reduce((a, p, i) => a + procCpu(p.pid!) - c0[i]!, 0);
  const sys = procs.reduce((a, p, i) => a + procCpu(p.pid!, true) - k0[i]!, 0);
  console.log(`  ffmpeg: ${cpu.toFixed(2)} s CPU, of which system ${sys.toFixed(2)} s`);
  const dead = procs.filter((p) => p.exitCode !== null).length;
  if (dead) console.log(`  ffmpeg: ${dead} of ${n} exited early`);
  for (const p of procs) p.kill('SIGKILL');
  return cpu;
}

async function main(): Promise<void> {
  benchHeader('hls-pull');
  const n = Number(process.argv[2] ?? 8);
  const seconds = Number(process.argv[3] ?? 20);
  const rounds = Number(process.argv[4] ?? 2);
  procs.work = mkdtempSync(join(tmpdir(), 'sluice-bench-hls-'));
  process.on('exit', cleanUp);
  process.on('SIGINT', () => process.exit(130));
  const src = join(procs.work, 'src.ts');
  execFileSync('ffmpeg', [
    ...['-hide_banner', '-loglevel', 'error', '-y'],
    ...['-f', 'lavfi', '-i', 'testsrc2=size=1280x720:rate=25:duration=20'],
    ...['-f', 'lavfi', '-i', 'sine=frequency=440:sample_rate=48000:duration=20'],
    ...['-c:v', 'libx264', '-preset', 'ultrafast', '-g', '50', '-b:v', '2M', '-maxrate', '2M'],
    ...['-bufsize', '2M', '-c:a', 'aac', '-b:a', '128k', '-f', 'mpegts', src],
  ]);
  const root = join(procs.work, 'www');
  const tmp = join(procs.work, 'tmp');
  for (let i = 0; i < n; i++) mkdirSync(join(root, `s${i}`), { recursive: true });
  mkdirSync(tmp);
  const port = await freePort();
  const conf = join(procs.work, 'nginx.conf');
  writeFileSync(
    conf,
    `daemon off;
master_process off;
${process.getuid?.() === 0 ? 'user root;' : ''}
worker_processes 1;
pid ${join(procs.work, 'nginx.pid')};
error_log ${join(procs.work, 'error.log')} warn;
events { worker_connections 1024; }
http {
  access_log off;
  sendfile on;
  client_body_temp_path ${tmp};
  proxy_temp_path ${tmp};
  fastcgi_temp_path ${tmp};
  uwsgi_temp_path ${tmp};
  scgi_temp_path ${tmp};
  types { video/mp2t ts; application/vnd.apple.mpegurl m3u8; }
  default_type application/octet-stream;
  server {
    listen 127.0.0.1:${port};
    root ${root};
    location / { add_header Cache-Control no-cache; }
  }
}
`,
  );
  track(
    spawn('nginx', ['-p', procs.work, '-c', conf, '-e', join(procs.work, 'error.log')], {
      stdio: 'ignore',
    }),
  );
  for (let i = 0; i < n; i++) {
    track(
      spawn(
        'ffmpeg',
        [
          ...['-hide_banner', '-loglevel', 'error', '-re', '-stream_loop', '-1', '-i', src],
          ...['-c', 'copy', '-f', 'hls', '-hls_time', String(SEGMENT_S), '-hls_list_size', '6'],
          ...['-hls_flags', 'delete_segments', join(root, `s${i}`, 'index.m3u8')],
        ],
        { stdio: 'ignore' },
      ),
    );
  }
  // Every playlist holds the 3 segments a live join starts from.
  const deadline = Date.now() + 30_000;
  const segmentsOf = (i: number): number => {
    try {
      return (readFileSync(join(root, `s${i}`, 'index.m3u8'), 'utf8').match(/#EXTINF/g) ?? [])
        .length;
    } catch {
      return 0;
    }
  };
  while (Array.from({ length: n }, (_, i) => segmentsOf(i)).some((c) => c < 4)) {
    if (Date.now() > deadline) throw new Error('HLS writers did not make 4 segments in 30 s');
    await sleep(250);
  }
  console.log(
    `HLS pull → TS, N = ${n}, ${seconds} s per side, 2 Mbit/s H.264 + 128k AAC each, ${SEGMENT_S} s segments`,
  );
  const rows: [string, number, number, number, number][] = [];
  // Both sluice children start together and run to the end, warmed up once (JIT_MS); the
  // windows then alternate with ffmpeg's.
  const bursts = await startSluice(port, n, 'bursts');
  const smooth = await startSluice(port, n, 'smooth');
  console.log(`  sluice: both children pulling; ${JIT_MS / 1000} s of warm-up`);
  await sleep(JIT_MS);
  for (let round = 1; round <= rounds; round++) {
    const b = await sluiceWindow(bursts, seconds);
    const f = await ffmpegSide(port, n, seconds);
    const s = await sluiceWindow(smooth, seconds);
    const fr = await ffmpegSide(port, n, seconds, true);
    rows.push([`round ${round}`, b, s, f, fr]);
  }
  await stopSluice(bursts);
  await stopSluice(smooth);
  console.log(
    '| run | N | sluice CPU % per stream, 100 ms grid | 20 ms grid | ffmpeg CPU % per stream | ffmpeg -re | ratio 100 ms / ffmpeg | ratio 20 ms / ffmpeg | ratio 20 ms / ffmpeg -re |',
  );
  console.log('|---|---|---|---|---|---|---|---|---|');
  const pct = (cpu: number) => (100 * cpu) / seconds / n;
  for (const [name, b, s, f, fr] of rows) {
    const pf = pct(f);
    const pr = pct(fr);
    console.log(
      `| ${name} | ${n} | ${pct(b).toFixed(3)} | ${pct(s).toFixed(3)} | ${pf.toFixed(3)} | ${pr.toFixed(3)} | ${(pct(b) / pf).toFixed(2)} | ${(pct(s) / pf).toFixed(2)} | ${(pct(s) / pr).toFixed(2)} |`,
    );
  }
  // Over all rounds: each side's CPU averaged (the ratios are those of the sums), so that one
  // round's drift in either weighs as much as its share of the time.
  if (rows.length > 1) {
    const mean = (k: 1 | 2 | 3 | 4) => rows.reduce((a, r) => a + r[k], 0) / rows.length;
    const [b, s, f, fr] = [mean(1), mean(2), mean(3), mean(4)];
    console.log(
      `| all ${rows.length} rounds | ${n} | ${pct(b).toFixed(3)} | ${pct(s).toFixed(3)} | ${pct(f).toFixed(3)} | ${pct(fr).toFixed(3)} | ${(b / f).toFixed(2)} | ${(s / f).toFixed(2)} | ${(s / fr).toFixed(2)} |`,
    );
  }
  cleanUp();
  process.exit(0);
}

if (process.argv[2] === 'child') {
  await child(Number(process.argv[3]), Number(process.argv[4]), process.argv[5] === 'smooth');
} else {
  await main();
}
