// Bench: memory at the window. The real server (`sluice serve`) with N 8 Mbit/s UDP channels
// (HLS-TS, 2 s segments, recorded), past warm-up: RSS per channel against the bytes of its live
// window, the fixed cost (RSS at 0 channels), and RSS under overload (more input than it takes).
// Loopback only; bounded in channel count and time.
// Usage: npx tsx bench/memory.ts [counts=5,20] [repeats=2]
// Env: MEMORY_WARMUP (s, default 30: the window and grace fill), MEMORY_SECONDS (s, default 10,
// RSS sampled once a second), MEMORY_OVER (`channels×Mbit/s`, default 10×80; 0 skips),
// MEMORY_DVR=0 (no recording).
import { type ChildProcess, execFileSync, spawn } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { freePort, startServer, tempDir } from '../test/helpers/server.ts';
import { makeFeedFile } from './lib/feed.ts';
import { benchHeader } from './lib/header.ts';
import { sleep } from './lib/proc.ts';

benchHeader('memory');

const counts = (process.argv[2] ?? '5,20').split(',').map(Number);
const REPEATS = Number(process.argv[3] ?? 2);
const WARMUP = Number(process.env.MEMORY_WARMUP ?? 30);
const SECONDS = Number(process.env.MEMORY_SECONDS ?? 10);
const [OVER_N, OVER_MBPS] = (process.env.MEMORY_OVER ?? '10x80').split(/[x×]/).map(Number);
const DVR = process.env.MEMORY_DVR !== '0';
/** Overload sends 10× the rate: the windows fill in a tenth of the time; then RSS must level. */
const OVER_WARMUP = 10;
const MAX_CHANNELS = 100;
const MBPS = 8;
const SEGMENT_S = 2;
/** Segments kept past the playlist for clients still fetching (src/ott/packager.ts). */
const GRACE = 2;
const SENDER = join(tmpdir(), 'sluice-memory-send');
const MB = 1e6;

const cleanups: (() => unknown)[] = [];
const t = { teardown: (fn: () => unknown) => cleanups.push(fn) };
const dir = await tempDir(t, 'sluice-memory-');
execFileSync('gcc', ['-O2', '-o', SENDER, join(import.meta.dirname, 'dvr-box-send.c')]);
const media = join(dir, 'ch.ts');
// 8 Mbit/s (CBR video with filler, AAC), long enough that a step never loops it (a loop is a
// discontinuity: an early cut and a shorter window).
makeFeedFile(media, MBPS * 1000 - 300, '640x360', WARMUP + SECONDS + 20);

/** Minor page faults of the process so far (/proc/PID/stat field 10). */
function faultsOf(pid: number): number {
  return Number(readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1]!.split(' ')[7]);
}

function rssMb(pid: number): number {
  const kb = /VmRSS:\s+(\d+)/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'))?.[1];
  return Number(kb) / 1024;
}

/** The paced sender (bench/dvr-box-send.c): N ports from `base`, `mbps` each. */
function send(base: number, n: number, mbps: number, seconds: number): ChildProcess {
  const p = spawn(SENDER, [
    media,
    '127.0.0.1',
    String(base),
    String(n),
    String(mbps),
    String(seconds),
  ]);
  t.teardown(() => p.kill('SIGKILL'));
  return p;
}

/** Every `key` in a status document, summed (the receivers' counters, wherever they sit). */
function sumOf(doc: unknown, key: string): number {
  if (!doc || typeof doc !== 'object') return 0;
  let n = 0;
  for (const [k, v] of Object.entries(doc))
    n += k === key && typeof v === 'number' ? v : sumOf(v, key);
  return n;
}

interface Step {
  rss: number[];
  /** Seconds of media in the live playlists (mean per channel). */
  windowS: number;
  queueDrops: number;
  poolFreeMb: number;
  faultsPerS: number;
}

async function step(n: number, mbps: number, warmup: number): Promise<Step> {
  const base = await freePort();
  const srv = await startServer(t, {
    config: {
      ...(DVR
        ? {
            'dvr-storage-list': {
              storage: [{ id: 1, name: 'bench', 'dir-path': join(dir, `store-${n}-${mbps}`) }],
            },
          }
        : {}),
      stream: Array.from({ length: n }, (_, i) => ({
        id: i + 1,
        'stream-name': `ch${i}`,
        pause: false,
        'ott-hls': 1,
        'ott-segment-duration': SEGMENT_S,
        ...(DVR ? { 'dvr-storage': 1 } : {}),
        input: [{ type: 'udp', address: '127.0.0.1', port: base + i }],
      })),
    },
  });
  const get = async (p: string) =>
    (await fetch(`${srv.url}${p}`, { signal: AbortSignal.timeout(10_000) })).text();
  await sleep(2000); // inputs bound
  const sender = n > 0 ? send(base, n, mbps, warmup + SECONDS + 3) : undefined;
  await sleep(warmup * 1000);
  const rss: number[] = [];
  const faults0 = faultsOf(srv.proc.pid!);
  for (let i = 0; i < SECONDS; i++) {
    rss.push(rssMb(srv.proc.pid!));
    await sleep(1000);
  }
  const faultsPerS = (faultsOf(srv.proc.pid!) - faults0) / SECONDS;
  let windowS = 0;
  for (let i = 0; i < n; i++) {
    const m3u8 = await get(`/ch${i}/index.m3u8`);
    for (const m of m3u8.matchAll(/#EXTINF:([\d.]+)/g)) windowS += Number(m[1]) / n;
  }
  const queueDrops = sumOf(JSON.parse(await get('/data/stream')), 'queueDrops');
  const free = /^sluice_ott_segment_pool_free_bytes (\S+)/m.exec(await get('/metrics'))?.[1];
  sender?.kill('SIGKILL');
  await srv.stop();
  return { rss, windowS, queueDrops, poolFreeMb: Number(free) / MB, faultsPerS };
}

const mean = (xs: number[]) => xs.reduce((a, b) => a + b, 0) / xs.length;
const spread = (xs: number[]) =>
  xs.length > 1 ? `${Math.min(...xs).toFixed(1)}–${Math.max(...xs).toFixed(1)}` : xs[0]!.toFixed(1);

try {
  console.log(
    `media ready; ${MBPS} Mbit/s channels, ${SEGMENT_S} s segments, recording ${DVR ? 'on' : 'off'}, warm-up ${WARMUP} s, ${SECONDS} s sampled, ${REPEATS} repeats`,
  );
  const fixed: number[] = [];
  for (let r = 0; r < REPEATS; r++) fixed.push(mean((await step(0, MBPS, 5)).rss));
  const fixedMb = mean(fixed);
  console.log(`0 ch: fixed cost RSS ${spread(fixed)} MB`);
  for (const n of counts.filter((c) => c > 0 && c <= MAX_CHANNELS)) {
    const per: number[] = [];
    const ratio: number[] = [];
    const ratioHeld: number[] = [];
    for (let r = 0; r < REPEATS; r++) {
      const s = await step(n, MBPS, WARMUP);
      const perCh = (mean(s.rss) - fixedMb) / n;
      // The live window's bytes at the sent rate, and with the grace segments the store keeps.
      const windowMb = (s.windowS * MBPS * MB) / 8 / MB;
      const heldMb = windowMb + (GRACE * SEGMENT_S * MBPS) / 8;
      per.push(perCh);
      ratio.push(perCh / windowMb);
      ratioHeld.push(perCh / heldMb);
      console.log(
        `  ${n} ch run ${r + 1}: RSS ${mean(s.rss).toFixed(0)} MB (max ${Math.max(...s.rss).toFixed(0)}), per channel ${perCh.toFixed(1)} MB, window ${windowMb.toFixed(1)} MB (${s.windowS.toFixed(1)} s), held with grace ${heldMb.toFixed(1)} MB, pool free ${s.poolFreeMb.toFixed(1)} MB, ${s.faultsPerS.toFixed(0)} page faults/s, queue drops ${s.queueDrops}`,
      );
    }
    console.log(
      `${n} ch: RSS per channel ${spread(per)} MB = ${spread(ratio.map((x) => x * 100))} % of the live window, ${spread(ratioHeld.map((x) => x * 100))} % of window + grace`,
    );
  }
  if (OVER_N! > 0) {
    // More input than the server takes: RSS must level off (queues drop, they do not grow).
    const s = await step(OVER_N!, OVER_MBPS!, OVER_WARMUP);
    const half = Math.floor(s.rss.length / 2);
    console.log(
      `overload ${OVER_N} ch × ${OVER_MBPS} Mbit/s: RSS ${s.rss.map((x) => x.toFixed(0)).join(' ')} MB; growth over the last ${s.rss.length - half} s ${(Math.max(...s.rss.slice(half)) - Math.max(...s.rss.slice(0, half))).toFixed(0)} MB; queue drops ${s.queueDrops}; pool free ${s.poolFreeMb.toFixed(1)} MB`,
    );
  }
} finally {
  for (const fn of cleanups.reverse()) await fn();
}
