// Bench: the recorder's writes, buffered vs O_DIRECT. 2 MB segments from page-aligned blocks
// (the segment pool's kind) written with writeDurable at a steady N files per second for S
// seconds, once through the page cache (`direct: false`) and once direct; the process's CPU
// (user + sys, all threads; the thread pool's share from /proc/self/task) per GB and the wall
// time of each write. Peer in the same round, same bytes and pace: one `dd bs=1M conv=fsync` of
// the segment's length per file from /dev/zero, with and without `oflag=direct` (dd sends its
// short last block through the page cache, as writeDurable sends its tail) (its CPU is its own:
// the children's times; a `dd count=0` per file is the start-up cost, printed to subtract).
// Not equal: dd reads /dev/zero (a memset) and renames nothing.
// Usage: flock /tmp/sluice-bench.lock npx tsx bench/record-write.ts [secs] [files/s] [repeats] [dir…]
// (dirs default to a directory on the repo's disk). Figures: printed; copy them to RESULTS.md.
import { execFile, execFileSync } from 'node:child_process';
import { randomFillSync } from 'node:crypto';
import { mkdtempSync, readFileSync, rmSync, statfsSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { performance } from 'node:perf_hooks';
import { writeDurable, writeDurableStats } from '../src/native/fs.ts';
import { mapBlock } from '../src/native/pages.ts';
import { benchHeader } from './lib/header.ts';
import { threadCpu } from './lib/proc.ts';

benchHeader('record-write');

const args = process.argv.slice(2);
const SECS = Number(args[0] ?? 15);
const RATE = Number(args[1] ?? 25);
const REPEATS = Number(args[2] ?? 3);
const DIRS = args.length > 3 ? args.slice(3) : [resolve(import.meta.dirname, '..')];
const SEG = 2_000_000;
const FILES = Math.round(SECS * RATE);
const MAX_OUTSTANDING = 64;
const HZ = Number(execFileSync('getconf', ['CLK_TCK'], { encoding: 'utf8' }).trim()) || 100;

type Kind = 'buffered' | 'direct' | 'dd' | 'dd-direct';
interface Run {
  cpuPerGb: number;
  sysPerGb: number;
  poolPerGb: number;
  wallP50: number;
  wallP90: number;
  wallMax: number;
  behind: number;
  took: string;
}

const FS_NAMES = new Map([
  [0xef53, 'ext4'],
  [0x01021994, 'tmpfs'],
  [0x58465342, 'xfs'],
  [0x9123683e, 'btrfs'],
  [0x794c7630, 'overlayfs'],
]);

/** The segment's bytes, in a block as the pool hands them out. */
const block = mapBlock(4 << 20);
randomFillSync(block);
const segment = block.subarray(0, SEG);

function pct(xs: number[], p: number): number {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.min(s.length - 1, Math.floor((p / 100) * s.length))] ?? NaN;
}

/** CPU seconds of the threads that are not the main one (the libuv pool does the writes). */
function poolCpu(): number {
  let s = 0;
  for (const [name, v] of threadCpu(process.pid)) if (name !== 'main') s += v;
  return s;
}

/** user + sys seconds of the children this process has waited for. */
function childrenCpu(): { user: number; sys: number } {
  const s = readFileSync('/proc/self/stat', 'utf8');
  const f = s.slice(s.lastIndexOf(')') + 2).split(' ');
  return { user: Number(f[13]) / HZ, sys: Number(f[14]) / HZ };
}

function dd(args: string[]): Promise<void> {
  return new Promise((ok, fail) => execFile('dd', args, (err) => (err ? fail(err) : ok())));
}

/** Start `job(i)` for i < FILES at RATE per second; each one's wall time. */
async function paced(
  job: (i: number) => Promise<void>,
): Promise<{ walls: number[]; behind: number }> {
  const walls: number[] = [];
  const running = new Set<Promise<void>>();
  let behind = 0;
  let failed: unknown;
  const t0 = performance.now();
  for (let i = 0; i < FILES && failed === undefined; i++) {
    const due = t0 + (i * 1000) / RATE;
    const wait = due - performance.now();
    if (wait > 0) await new Promise((r) => setTimeout(r, wait));
    else if (wait < -1000 / RATE) behind++;
    while (running.size >= MAX_OUTSTANDING) await Promise.race(running);
    const start = performance.now();
    const p: Promise<void> = job(i)
      .then(
        () => void walls.push(performance.now() - start),
        (err: unknown) => {
          failed ??= err;
        },
      )
      .finally(() => running.delete(p));
    running.add(p);
  }
  // Every write ends before the run's directory goes, a failed one too.
  await Promise.all(running);
  if (failed !== undefined) throw failed;
  return { walls, behind };
}

async function run(kind: Kind, dir: string): Promise<Run> {
  const work = mkdtempSync(join(dir, '.sluice-record-write-'));
  try {
    const file = (i: number) => join(work, `seg-${i}.ts`);
    const before = { cpu: process.cpuUsage(), pool: poolCpu(), kids: childrenCpu() };
    const stats0 = writeDurableStats();
    const { walls, behind } = await paced((i) => {
      if (kind === 'buffered') return writeDurable(file(i), segment, { direct: false });
      if (kind === 'direct') return writeDurable(file(i), segment);
      const flags = kind === 'dd-direct' ? ['oflag=direct'] : [];
      return dd([
        'if=/dev/zero',
        `of=${file(i)}`,
        'bs=1M',
        'iflag=count_bytes',
        `count=${SEG}`,
        'conv=fsync',
        ...flags,
        'status=none',
      ]);
    });
    const gb = (FILES * SEG) / 1e9;
    const cpu = process.cpuUsage(before.cpu);
    const kids = childrenCpu();
    const own = kind === 'buffered' || kind === 'direct';
    const user = own ? cpu.user / 1e6 : kids.user - before.kids.user;
    const sys = own ? cpu.system / 1e6 : kids.sys - before.kids.sys;
    const stats = writeDurableStats();
    return {
      cpuPerGb: (user + sys) / gb,
      sysPerGb: sys / gb,
      poolPerGb: own ? (poolCpu() - before.pool) / gb : NaN,
      wallP50: pct(walls, 50),
      wallP90: pct(walls, 90),
      wallMax: pct(walls, 100),
      behind,
      took: own
        ? `direct ${stats.direct - stats0.direct}, buffered ${stats.buffered - stats0.buffered}, fallbacks ${stats.fallbacks - stats0.fallbacks}`
        : '',
    };
  } finally {
    rmSync(work, { recursive: true, force: true });
  }
}

/** CPU seconds per file of dd's start-up alone (count=0 into /dev/null), FILES times. */
async function ddStartup(): Promise<number> {
  const k0 = childrenCpu();
  for (let i = 0; i < Math.min(FILES, 200); i++)
    await dd(['if=/dev/zero', 'of=/dev/null', 'count=0', 'status=none']);
  const k1 = childrenCpu();
  return (k1.user + k1.sys - k0.user - k0.sys) / Math.min(FILES, 200);
}

const range = (xs: number[], digits = 2) =>
  `${Math.min(...xs).toFixed(digits)}–${Math.max(...xs).toFixed(digits)}`;

console.log(
  `# ${FILES} files of ${SEG} bytes per run (${RATE}/s for ${SECS} s, ${((RATE * SEG * 8) / 1e6).toFixed(0)} Mbit/s), ${REPEATS} repeats, kinds alternating within each repeat`,
);
const startup = await ddStartup();
console.log(
  `# dd start-up alone: ${(startup * 1000).toFixed(2)} ms CPU per file (${((startup * 1e9) / SEG).toFixed(2)} s per GB at this size)`,
);
for (const dir of DIRS) {
  const fs = FS_NAMES.get(statfsSync(dir).type) ?? `fs 0x${statfsSync(dir).type.toString(16)}`;
  console.log(`\n## ${dir} (${fs})`);
  const runs = new Map<Kind, Run[]>();
  for (let r = 0; r < REPEATS; r++) {
    for (const kind of ['buffered', 'direct', 'dd', 'dd-direct'] as Kind[]) {
      const x = await run(kind, dir);
      runs.set(kind, [...(runs.get(kind) ?? []), x]);
      console.log(
        `  repeat ${r + 1} ${kind.padEnd(9)} CPU ${x.cpuPerGb.toFixed(2)} s/GB (sys ${x.sysPerGb.toFixed(2)}, pool threads ${x.poolPerGb.toFixed(2)}) · wall per write p50 ${x.wallP50.toFixed(1)} ms p90 ${x.wallP90.toFixed(1)} max ${x.wallMax.toFixed(1)} · behind ${x.behind}${x.took ? ` · ${x.took}` : ''}`,
      );
    }
  }
  for (const [kind, xs] of runs) {
    console.log(
      `  ${kind.padEnd(9)} CPU ${range(xs.map((x) => x.cpuPerGb))} s/GB, sys ${range(xs.map((x) => x.sysPerGb))}, wall p50 ${range(
        xs.map((x) => x.wallP50),
        1,
      )} ms, p90 ${range(
        xs.map((x) => x.wallP90),
        1,
      )} ms`,
    );
  }
}
