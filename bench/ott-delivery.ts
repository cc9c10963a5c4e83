// Benchmark: OTT delivery of the real server (`bin/sluice.js serve`, a stream packaged live
// from a UDP feed) beside nginx serving the same bytes from files and a bare node:http server
// serving the same Buffer, in the same run: wrk requests/s on a live ~2 MB segment and on the
// live playlist; then 1,000 concurrent HLS clients held on loopback (errors, latency).
// Equal work: the same bytes to the same wrk; nginx runs at its fastest for this on loopback
// (bench/http-peers.ts: sendfile off, 1 MB output buffers, open-file cache), one worker like
// one sluice process; the bare node:http server holds the Buffer in memory (no file reads).
// Run: npx tsx bench/ott-delivery.ts [wrk seconds, default 5] [hold seconds, default 20]
// Figures: bench/RESULTS.md.
import { type ChildProcess, execFileSync, spawn } from 'node:child_process';
import { chmodSync, mkdirSync, readFileSync, renameSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { freePort, startServer, type Teardown, waitFor } from '../test/helpers/server.ts';
import { SEGMENT_STYLE, startNginx, type WrkFigures, wrk } from './http-peers.ts';
import { feedUdp, makeFeedFile } from './lib/feed.ts';
import { benchHeader } from './lib/header.ts';

const WRK_S = Number(process.argv[2] ?? 5);
const HOLD_S = Number(process.argv[3] ?? 20);
const CLIENTS = 1000;
const ROUNDS = 5;
/** USER_HZ of /proc/<pid>/stat on Linux. */
const CLOCK_TICKS = 100;
const SEGMENT_S = 4;
/** 4 s at ~4.1 Mbit/s: the ~2 MB segment of the issue. */
const BIG_KBPS = 4000;
/** The held clients watch an SD-like channel so 1,000 of them fit the loopback of 2 cores. */
const HOLD_KBPS = 800;
const SEGMENT_CONNECTIONS = 8;
const PLAYLIST_CONNECTIONS = 32;
const READY_MS = 90_000;
/** Goals of issue 4. */
const GOAL_SEG_NGINX = 0.75;
const GOAL_SEG_NODE = 0.9;
const GOAL_PLAYLIST_NGINX = 0.4;

/** One wrk run with the bytes served and the server's CPU per request (NaN for nginx). */
interface Run extends WrkFigures {
  bytes: number;
  cpuUsPerReq: number;
}

/**
 * A bare node:http server answering every request with the bytes of `file` (another process).
 * SIGHUP re-reads the file, so each round serves exactly the bytes the server serves then,
 * with nothing added to the request path.
 */
async function bareNode(
  file: string,
  type: string,
): Promise<{ url: string; proc: ChildProcess; reload(): Promise<void> }> {
  const port = await freePort();
  const code = `
    const http = require('node:http');
    const fs = require('node:fs');
    let body = fs.readFileSync(${JSON.stringify(file)});
    process.on('SIGHUP', () => {
      body = fs.readFileSync(${JSON.stringify(file)});
      process.stdout.write('reloaded\\n');
    });
    http.createServer((req, res) => {
      res.writeHead(200, { 'Content-Type': ${JSON.stringify(type)}, 'Content-Length': body.length });
      res.end(body);
    }).listen(${port}, '127.0.0.1', () => process.stdout.write('up\\n'));`;
  const proc = spawn(process.execPath, ['-e', code], { stdio: ['ignore', 'pipe', 'inherit'] });
  const line = () =>
    new Promise<void>((resolve, reject) => {
      const onExit = () => reject(new Error('bare node server exited'));
      proc.stdout!.once('data', () => {
        proc.off('exit', onExit);
        resolve();
      });
      proc.once('exit', onExit);
    });
  await line();
  return {
    url: `http://127.0.0.1:${port}/x`,
    proc,
    async reload() {
      const done = line();
      proc.kill('SIGHUP');
      await done;
    },
  };
}

/** CPU seconds (user + system) a process has used so far, from /proc (Linux). */
function cpuSeconds(pid: number): number {
  const fields = readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1]!.split(' ');
  return (Number(fields[11]) + Number(fields[12])) / CLOCK_TICKS;
}

function loadAverage(): string {
  return readFileSync('/proc/loadavg', 'utf8').split(' ').slice(0, 3).join(' ');
}

function verdict(r: number, goal: number): string {
  return `≥ ${goal}× ${r >= goal ? 'met' : 'missed'}`;
}

async function main(): Promise<void> {
  benchHeader('ott-delivery');
  const cleanups: (() => unknown)[] = [];
  const t: Teardown = { teardown: (fn) => cleanups.push(fn) };
  const procs: ChildProcess[] = [];
  try {
    const big = `/tmp/sluice-bench-ott-big-${process.pid}.ts`;
    const small = `/tmp/sluice-bench-ott-small-${process.pid}.ts`;
    cleanups.push(() => execFileSync('rm', ['-f', big, small]));
    console.log('generating the feeds …');
    makeFeedFile(big, BIG_KBPS, '1280x720');
    makeFeedFile(small, HOLD_KBPS, '640x360');
    const [bigPort, smallPort] = [await freePort(), await freePort()];
    const stream = (id: number, name: string, port: number) => ({
      id,
      'stream-name': name,
      pause: false,
      'ott-hls': 1,
      'ott-segment-duration': SEGMENT_S,
      'ott-window': 6,
      input: [{ type: 'udp', port, 'bind-if': '127.0.0.1' }],
    });
    const srv = await startServer(t, {
      config: { stream: [stream(1, 'big', bigPort), stream(2, 'sd', smallPort)] },
      // OTT_BENCH_PROF=file.cjs: preloaded into the server (e.g. a profiler).
      env: process.env.OTT_BENCH_PROF
        ? { NODE_OPTIONS: `--require ${process.env.OTT_BENCH_PROF}` }
        : {},
    });
    cleanups.push(() => srv.stop());
    procs.push(feedUdp(big, bigPort), feedUdp(small, smallPort));
    const playlist = `${srv.url}/big/index.m3u8`;
    const segUri = await waitFor(
      'two live segments of the big stream',
      async () => {
        const r = await fetch(playlist).catch(() => undefined);
        if (!r?.ok) return undefined;
        const uris = (await r.text()).match(/^seg-[0-9a-f]+\.ts$/gm) ?? [];
        return uris.length >= 2 ? uris[uris.length - 1] : undefined;
      },
      READY_MS,
    ).catch(async (err) => {
      const status = await (await fetch(`${srv.url}/data/status`)).text();
      throw new Error(`${(err as Error).message}\nstatus: ${status}\n${srv.output()}`);
    });
    await waitFor(
      'two live segments of the SD stream',
      async () => {
        const r = await fetch(`${srv.url}/sd/index.m3u8`).catch(() => undefined);
        return r?.ok && ((await r.text()).match(/#EXTINF/g)?.length ?? 0) >= 2 ? true : undefined;
      },
      READY_MS,
    );

    // The same bytes as files for nginx and as a Buffer for the bare node:http server.
    const root = join(srv.dir, 'www');
    mkdirSync(root, { recursive: true });
    // nginx's worker runs as an unprivileged user: let it into the temp dir.
    chmodSync(srv.dir, 0o755);
    const segBytes = Buffer.from(await (await fetch(`${srv.url}/big/${segUri}`)).arrayBuffer());
    const plText = await (await fetch(playlist)).text();
    writeFileSync(join(root, 'seg.ts'), segBytes);
    writeFileSync(join(root, 'index.m3u8'), plText);
    const nginx = await startNginx(join(srv.dir, 'nginx'), root, SEGMENT_STYLE);
    cleanups.push(() => nginx.stop());
    const nodeSeg = await bareNode(join(root, 'seg.ts'), 'video/mp2t');
    const nodePl = await bareNode(join(root, 'index.m3u8'), 'application/vnd.apple.mpegurl');
    procs.push(nodeSeg.proc, nodePl.proc);

    // Each round: fetch what the server serves now (the newest live segment, the current
    // playlist), give nginx and the bare server exactly those bytes, then one wrk run per
    // contender in an order rotated each round (the machine is shared: a neighbour's burst
    // should not always hit the same contender). Live segments differ in size by up to ~12 %
    // (2.10–2.35 MB here), so comparing against a copy taken once would not be the same work.
    const get = (url: string) => fetch(url).catch(() => fetch(url));
    const contest = async (what: 'segment' | 'playlist', c: number) => {
      const names = ['sluice', 'nginx', 'node'] as const;
      const runs = names.map(() => [] as Run[]);
      const loads: string[] = [];
      let bytes = 0;
      for (let i = 0; i < ROUNDS; i++) {
        // wrk runs synchronously, so a kept-alive socket may have been closed by the server
        // without this process noticing: `get` retries once on a new connection.
        const text = await (await get(playlist)).text();
        const uris = text.match(/^seg-[0-9a-f]+\.ts$/gm) ?? [];
        const ours = what === 'segment' ? `${srv.url}/big/${uris[uris.length - 1]}` : playlist;
        const body = what === 'segment' ? Buffer.from(await (await get(ours)).arrayBuffer()) : text;
        const file = join(root, what === 'segment' ? 'seg.ts' : 'index.m3u8');
        writeFileSync(`${file}.new`, body);
        renameSync(`${file}.new`, file);
        await (what === 'segment' ? nodeSeg : nodePl).reload();
        bytes = Buffer.byteLength(body);
        loads.push(loadAverage());
        const urls = [
          ours,
          `http://127.0.0.1:${nginx.port}/${what === 'segment' ? 'seg.ts' : 'index.m3u8'}`,
          (what === 'segment' ? nodeSeg : nodePl).url,
        ];
        const pids = [srv.proc.pid, undefined, (what === 'segment' ? nodeSeg : nodePl).proc.pid];
        for (let j = 0; j < names.length; j++) {
          const k = (i + j) % names.length;
          const cpu0 = pids[k] ? cpuSeconds(pids[k]!) : 0;
          const f = wrk(urls[k]!, { seconds: WRK_S, connections: c });
          const cpu = pids[k] ? cpuSeconds(pids[k]!) - cpu0 : Number.NaN;
          runs[k]!.push({ ...f, bytes, cpuUsPerReq: (cpu * 1e6) / (f.rps * WRK_S) });
        }
      }
      const median = (xs: number[]) => [...xs].sort((x, y) => x - y)[xs.length >> 1]!;
      const byRps = (rs: Run[]) => [...rs].sort((x, y) => x.rps - y.rps)[rs.length >> 1]!;
      // Ratios within a round (same bytes, runs seconds apart), then the median over rounds.
      const roundRatio = (k: number) => median(runs[0]!.map((r, i) => r.rps / runs[k]![i]!.rps));
      return {
        bytes,
        loads,
        ours: byRps(runs[0]!),
        nginx: byRps(runs[1]!),
        node: byRps(runs[2]!),
        vsNginx: roundRatio(1),
        vsNode: roundRatio(2),
        cpu: {
          ours: median(runs[0]!.map((r) => r.cpuUsPerReq)),
          node: median(runs[2]!.map((r) => r.cpuUsPerReq)),
        },
        rounds: runs.map((rs) => rs.map((r) => r.rps.toFixed(0)).join(' ')),
      };
    };
    const s = await contest('segment', SEGMENT_CONNECTIONS);
    const p = await contest('playlist', PLAYLIST_CONNECTIONS);
    console.log(
      `segment ~${s.bytes} bytes (${SEGMENT_CONNECTIONS} connections), playlist ${p.bytes} bytes (${PLAYLIST_CONNECTIONS} connections), wrk -t1 ${WRK_S} s each, ${ROUNDS} rounds, median by req/s`,
    );
    console.log(`load average before each segment round: ${s.loads.join(' | ')}`);
    console.log(`load average before each playlist round: ${p.loads.join(' | ')}`);
    console.log('| wrk run | req/s | p50 | p99 | transfer MB/s | server CPU µs/request |');
    console.log('|---|---|---|---|---|---|');
    const row = (name: string, f: Run) =>
      console.log(
        `| ${name} | ${f.rps.toFixed(0)} | ${f.p50Ms.toFixed(2)} ms | ${f.p99Ms.toFixed(2)} ms | ${f.mbPerSec.toFixed(0)} | ${Number.isNaN(f.cpuUsPerReq) ? '—' : f.cpuUsPerReq.toFixed(0)} |`,
      );
    row('sluice live segment', s.ours);
    row('nginx, same bytes from a file', s.nginx);
    row('bare node:http, same bytes', s.node);
    row('sluice live playlist', p.ours);
    row('nginx, same playlist from a file', p.nginx);
    row('bare node:http, same playlist', p.node);
    console.log(`req/s per round (sluice | nginx | node): segment ${s.rounds.join(' | ')}`);
    console.log(`req/s per round (sluice | nginx | node): playlist ${p.rounds.join(' | ')}`);
    console.log(
      `server CPU per request, median (sluice includes its live ingest): segment sluice ${s.cpu.ours.toFixed(0)} µs, node ${s.cpu.node.toFixed(0)} µs; playlist sluice ${p.cpu.ours.toFixed(1)} µs, node ${p.cpu.node.toFixed(1)} µs`,
    );
    console.log('ratios: median over rounds of the ratio within each round');
    console.log(`segment / nginx ${s.vsNginx.toFixed(2)}× (${verdict(s.vsNginx, GOAL_SEG_NGINX)})`);
    console.log(
      `segment / node:http ${s.vsNode.toFixed(2)}× (${verdict(s.vsNode, GOAL_SEG_NODE)})`,
    );
    console.log(
      `playlist / nginx (1 worker = 1 core; sluice 1 process) ${p.vsNginx.toFixed(2)}× (${verdict(p.vsNginx, GOAL_PLAYLIST_NGINX)})`,
    );

    console.log(`holding ${CLIENTS} HLS clients for ${HOLD_S} s on /sd/index.m3u8 …`);
    const hold = spawn(
      process.execPath,
      ['--import', 'tsx', join(import.meta.dirname, 'ott-clients.ts'), `${srv.url}/sd/index.m3u8`],
      {
        env: { ...process.env, CLIENTS: String(CLIENTS), SECONDS: String(HOLD_S) },
        stdio: ['ignore', 'pipe', 'inherit'],
      },
    );
    procs.push(hold);
    let out = '';
    hold.stdout!.on('data', (d: Buffer) => {
      out += d.toString();
    });
    await new Promise((r) => hold.once('exit', r));
    process.stdout.write(out);
  } finally {
    for (const p of procs) if (p.exitCode === null) p.kill('SIGKILL');
    for (const fn of cleanups.reverse()) await fn();
  }
}

await main();
