// Benchmark: RTMP pull of N streams into MPEG-TS — sluice's `rtmp` input (N inputs in one
// process: handshake, chunk stream, FLV → TS through the elementary-stream muxer, TS handed to
// a sink that counts it) beside N `ffmpeg -i rtmp://… -c copy -f mpegts /dev/null` doing the
// same N. The origin is nginx with the RTMP module (our own child, temporary prefix), fed by N
// `ffmpeg -re -stream_loop -1 -i src.flv -c copy -f flv` publishers of one 2 Mbit/s H.264 + AAC
// file; origin and publishers run for both sides alike and are not measured. nginx runs as one
// process (`master_process off`), so killing it leaves no worker behind.
// CPU: utime + stime from /proc/<pid>/stat (the sluice child; the sum of the N ffmpeg
// processes) over the same window, after every pull delivers and a warm-up; the sides run one
// after the other, twice (sluice, ffmpeg, sluice, ffmpeg) so load drift hits both.
// Run: [SLUICE_BENCH_WARMUP_S=3] npx tsx bench/rtmp-pull.ts [N=8] [seconds=15]
// Figures: printed; copy them to bench/RESULTS.md.
import { type ChildProcess, execFileSync, spawn } from 'node:child_process';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import { benchHeader } from './lib/header.ts';
import { BenchProcs, freePort, procCpu, sleep, threadCpu } from './lib/proc.ts';

const MODULE = '/usr/lib/nginx/modules/ngx_rtmp_module.so';
/** Before each measured window (SLUICE_BENCH_WARMUP_S, default 3): connections up, code warm. */
const WARMUP_MS = Number(process.env['SLUICE_BENCH_WARMUP_S'] ?? 3) * 1000;
/** SLUICE_BENCH_PROF=<dir>: the sluice child writes a V8 CPU profile there. */
const PROF = process.env['SLUICE_BENCH_PROF']
  ? ['--cpu-prof', '--cpu-prof-dir', process.env['SLUICE_BENCH_PROF']]
  : [];
const procs = new BenchProcs();
const track = (cp: ChildProcess) => procs.track(cp);
const cleanUp = () => procs.cleanUp();

/** Child: N rtmp inputs pulling rtmp://127.0.0.1:port/live/s<i>; prints `ready` once every
 *  input delivered TS, then on `report` a JSON line of TS bytes and frames. */
async function child(port: number, n: number): Promise<void> {
  const { RtmpInput } = await import('../src/inputs/rtmp/input.ts');
  const { silentLogger } = await import('../src/log.ts');
  const { systemClock } = await import('../src/util/clock.ts');
  const { recvLowWaterOf } = await import('../src/inputs/recv-low-water.ts');
  const bytes = new Array<number>(n).fill(0);
  let deliveries = 0;
  const inputs = Array.from({ length: n }, (_, i) => {
    const inp = new RtmpInput(
      { url: `rtmp://127.0.0.1:${port}/live/s${i}`, 'client-timeout': 10 },
      {
        log: silentLogger,
        clock: systemClock,
        dataDir: tmpdir(),
        streamName: `s${i}`,
        index: 0,
        onData: (b: Buffer) => {
          bytes[i]! += b.length;
          deliveries++;
        },
        bus: () => undefined,
      },
    );
    inp.start();
    return inp;
  });
  while (bytes.some((b) => b === 0)) await sleep(50);
  console.log('ready');
  createInterface({ input: process.stdin }).on('line', (line) => {
    if (line !== 'report') return;
    let frames = 0;
    for (const inp of inputs) {
      const s = inp.status() as { videoFrames: number; audioFrames: number };
      frames += s.videoFrames + s.audioFrames;
    }
    // deliveries: TS handed on, one per socket read that completed a frame (the wake-ups).
    console.log(
      JSON.stringify({
        tsBytes: bytes.reduce((a, b) => a + b, 0),
        frames,
        deliveries,
        lowWater: recvLowWaterOf(systemClock).counters,
      }),
    );
    process.exit(0);
  });
}

async function sluiceSide(port: number, n: number, seconds: number): Promise<number> {
  const cp = track(
    spawn(
      process.execPath,
      [...PROF, '--import', 'tsx', import.meta.filename, 'child', String(port), String(n)],
      {
        stdio: ['pipe', 'pipe', 'inherit'],
      },
    ),
  );
  const lines = createInterface({ input: cp.stdout! })[Symbol.asyncIterator]();
  const first = await lines.next();
  if (first.value !== 'ready') throw new Error(`sluice child: ${first.value}`);
  await sleep(WARMUP_MS);
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
  cp.stdin!.write('report\n');
  const r = await lines.next();
  console.log(`  sluice: ${r.value}`);
  const exited = new Promise((res) => cp.once('exit', res));
  const timer = setTimeout(() => cp.kill('SIGKILL'), 5000);
  await exited;
  clearTimeout(timer);
  return cpu;
}

async function ffmpegSide(port: number, n: number, seconds: number): Promise<number> {
  const procs = Array.from({ length: n }, (_, i) =>
    track(
      spawn(
        'ffmpeg',
        [
          ...['-hide_banner', '-loglevel', 'error', '-nostats'],
          ...[
            '-i',
            `rtmp://127.0.0.1:${port}/live/s${i}`,
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
  benchHeader('rtmp-pull');
  const n = Number(process.argv[2] ?? 8);
  const seconds = Number(process.argv[3] ?? 15);
  procs.work = mkdtempSync(join(tmpdir(), 'sluice-bench-rtmp-'));
  process.on('exit', cleanUp);
  process.on('SIGINT', () => process.exit(130));
  const src = join(procs.work, 'src.flv');
  execFileSync('ffmpeg', [
    ...['-hide_banner', '-loglevel', 'error', '-y'],
    ...['-f', 'lavfi', '-i', 'testsrc2=size=1280x720:rate=25:duration=20'],
    ...['-f', 'lavfi', '-i', 'sine=frequency=440:sample_rate=48000:duration=20'],
    ...['-c:v', 'libx264', '-preset', 'ultrafast', '-g', '50', '-b:v', '2M', '-maxrate', '2M'],
    ...['-bufsize', '2M', '-c:a', 'aac', '-b:a', '128k', '-f', 'flv', src],
  ]);
  const port = await freePort();
  const conf = join(procs.work, 'nginx.conf');
  writeFileSync(
    conf,
    `load_module ${MODULE};
daemon off;
master_process off;
${process.getuid?.() === 0 ? 'user root;' : ''}
worker_processes 1;
pid ${join(procs.work, 'nginx.pid')};
error_log ${join(procs.work, 'error.log')} warn;
events { worker_connections 1024; }
rtmp { server { listen 127.0.0.1:${port}; chunk_size 4096; application live { live on; } } }
`,
  );
  track(
    spawn('nginx', ['-p', procs.work, '-c', conf, '-e', join(procs.work, 'error.log')], {
      stdio: 'ignore',
    }),
  );
  await sleep(500);
  for (let i = 0; i < n; i++) {
    track(
      spawn(
        'ffmpeg',
        [
          ...['-hide_banner', '-loglevel', 'error', '-re', '-stream_loop', '-1', '-i', src],
          ...['-c', 'copy', '-f', 'flv', `rtmp://127.0.0.1:${port}/live/s${i}`],
        ],
        { stdio: 'ignore' },
      ),
    );
  }
  await sleep(2000);
  console.log(`RTMP pull → TS, N = ${n}, ${seconds} s per side, 2 Mbit/s H.264 + 128k AAC each`);
  const rows: [string, number, number][] = [];
  for (let round = 1; round <= 2; round++) {
    const s = await sluiceSide(port, n, seconds);
    const f = await ffmpegSide(port, n, seconds);
    rows.push([`round ${round}`, s, f]);
  }
  console.log('| run | N | sluice CPU % per stream | ffmpeg CPU % per stream | ratio |');
  console.log('|---|---|---|---|---|');
  for (const [name, s, f] of rows) {
    const ps = (100 * s) / seconds / n;
    const pf = (100 * f) / seconds / n;
    console.log(
      `| ${name} | ${n} | ${ps.toFixed(2)} | ${pf.toFixed(2)} | ${(ps / pf).toFixed(2)} |`,
    );
  }
  cleanUp();
  process.exit(0);
}

if (process.argv[2] === 'child') {
  await child(Number(process.argv[3]), Number(process.argv[4]));
} else {
  await main();
}
