// Benchmark: the mosaic's CPU for N streams' thumbnails per refresh, beside the naive way — a
// full decode of the same N streams over the same refresh period.
// Fixture: one 1280×720 25 fps H.264 TS (1 s GOP, 10 s, made once by ffmpeg, not measured).
// Thumbnail side: the fixture fed through HttpTsFanout (the key-frame tap the mosaic reads),
// its latest key frame decoded to a 320-wide JPEG for each of N streams (src/ott/thumbnail.ts:
// the same argv, the same pool of MOSAIC_WORKERS): that is one refresh of N streams, measured
// with MOSAIC_BATCH streams per child (the mosaic's way) and with one child per stream.
// Full side: `ffmpeg -threads 1 -i fixture.ts -f null -` decodes the whole 10 s (one refresh
// period at refresh-sec 10) of one stream; run D times and scaled to N (every stream costs the
// same: same size, rate and codec).
// CPU: the children's whole user + system time, start-up included, as this process's reaped
// children's time (/proc/self/stat cutime + cstime) around each side; beside it the figure of
// their `-benchmark` lines (what the mosaic exports as sluice_mosaic_decoder_cpu_seconds_total:
// the decode itself, without the process start-up and the input probe).
// Run: npx tsx bench/mosaic.ts [N=100] [D=3]
import { execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { MOSAIC_BATCH, MOSAIC_WORKERS } from '../src/drivers/mosaic.ts';
import { HttpTsFanout } from '../src/ott/http-ts.ts';
import { JobPool, runFfmpeg, thumbnailArgs, thumbnailSize } from '../src/ott/thumbnail.ts';
import { benchHeader } from './lib/header.ts';

benchHeader('mosaic');

const HZ = Number(execFileSync('getconf', ['CLK_TCK'], { encoding: 'utf8' }).trim()) || 100;
/** CPU seconds of this process's reaped children (user + system). */
function childrenCpu(): number {
  const s = readFileSync('/proc/self/stat', 'utf8');
  const f = s.slice(s.lastIndexOf(')') + 2).split(' ');
  return (Number(f[13]) + Number(f[14])) / HZ;
}

const N = Number(process.argv[2] ?? 100);
const D = Number(process.argv[3] ?? 3);
const PERIOD_S = 10;
const work = mkdtempSync(join(tmpdir(), 'sluice-bench-mosaic-'));
process.on('exit', () => rmSync(work, { recursive: true, force: true }));

const fixture = join(work, 'hd.ts');
// biome-ignore format: argv
await runFfmpeg(['-v', 'error', '-f', 'lavfi', '-i', `testsrc2=s=1280x720:r=25:d=${PERIOD_S}`,
  '-c:v', 'libx264', '-preset', 'veryfast', '-b:v', '4M', '-g', '25', '-keyint_min', '25',
  '-f', 'mpegts', '-y', fixture], [], 0);
const ts = readFileSync(fixture);

const fan = new HttpTsFanout();
for (let o = 0; o < ts.length; o += 188 * 7) fan.packets(ts.subarray(o, o + 188 * 7));
const kf = fan.keyFrame();
if (!kf) throw new Error('no key frame in the fixture');
const { width, height } = thumbnailSize(320);

/** One refresh of N streams, `batch` key frames per child, through a pool of MOSAIC_WORKERS. */
async function refresh(batch: number) {
  const pool = new JobPool(MOSAIC_WORKERS);
  let bench = 0;
  const c0 = childrenCpu();
  const t0 = performance.now();
  const jobs: Promise<void>[] = [];
  for (let i = 0; i < N; i += batch) {
    const k = Math.min(batch, N - i);
    jobs.push(
      pool.run(async () => {
        const r = await runFfmpeg(thumbnailArgs(k, width, height), Array(k).fill(kf!.ts), k);
        if (r.outs.some((o) => o.length === 0)) throw new Error('a thumbnail is missing');
        bench += r.cpuSec;
      }),
    );
  }
  await Promise.all(jobs);
  return { wall: (performance.now() - t0) / 1000, cpu: childrenCpu() - c0, bench };
}

let fullBench = 0;
const c1 = childrenCpu();
for (let i = 0; i < D; i++) {
  // biome-ignore format: argv
  const r = await runFfmpeg(['-hide_banner', '-nostats', '-benchmark', '-threads', '1', '-i', fixture,
    '-f', 'null', '-'], [], 0);
  fullBench += r.cpuSec;
}
const full = ((childrenCpu() - c1) / D) * N;

console.log(`fixture: 1280x720 25 fps H.264, ${PERIOD_S} s, key frame ${kf.ts.length} bytes`);
console.log(
  `full decode: ${(full / N).toFixed(2)} s CPU per stream per ${PERIOD_S} s (-benchmark ${(fullBench / D).toFixed(2)}), × ${N} = ${full.toFixed(1)} s`,
);
for (const batch of [1, MOSAIC_BATCH]) {
  const r = await refresh(batch);
  console.log(
    `thumbnails, ${batch} per child: ${N} in ${r.wall.toFixed(1)} s wall, CPU ${r.cpu.toFixed(2)} s (${((r.cpu / N) * 1000).toFixed(1)} ms each; -benchmark ${r.bench.toFixed(2)} s); ratio to full decode ${(r.cpu / full).toFixed(3)}`,
  );
}
