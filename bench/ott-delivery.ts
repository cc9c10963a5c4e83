// Benchmark: OTT delivery of the real server (`bin/sluice.js serve`, a stream packaged live
// from a UDP feed) beside nginx serving the same bytes from files and a bare node:http server
// serving the same Buffer, in the same run: wrk requests/s on a live ~2 MB segment and on the
// live playlist; then 1,000 concurrent HLS clients held on loopback (errors, latency).
// Run: npx tsx bench/ott-delivery.ts [wrk seconds, default 5] [hold seconds, default 20]
// Figures: bench/RESULTS.md.
import { type ChildProcess, execFileSync, spawn } from 'node:child_process';
import { chmodSync, mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { freePort, startServer, type Teardown, waitFor } from '../test/helpers/server.ts';
import { startNginx, wrk } from './ott-peers.ts';

const WRK_S = Number(process.argv[2] ?? 5);
const HOLD_S = Number(process.argv[3] ?? 20);
const CLIENTS = 1000;
const ROUNDS = 3;
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

function makeFile(file: string, kbps: number, size: string): void {
  execFileSync('ffmpeg', [
    ...['-hide_banner', '-loglevel', 'error', '-y'],
    ...['-f', 'lavfi', '-i', `testsrc2=size=${size}:rate=25:duration=16`],
    ...['-f', 'lavfi', '-i', 'sine=frequency=440:sample_rate=48000:duration=16'],
    ...['-c:v', 'libx264', '-preset', 'ultrafast', '-pix_fmt', 'yuv420p'],
    ...['-b:v', `${kbps}k`, '-minrate', `${kbps}k`, '-maxrate', `${kbps}k`],
    ...['-bufsize', `${kbps}k`, '-x264-params', 'nal-hrd=cbr:force-cfr=1'],
    ...['-g', '50', '-keyint_min', '50', '-sc_threshold', '0'],
    ...['-c:a', 'aac', '-b:a', '96k', '-f', 'mpegts', file],
  ]);
}

/** ffmpeg playing a file in a loop at its own pace into a UDP port. */
function feed(file: string, port: number): ChildProcess {
  return spawn(
    'ffmpeg',
    [
      ...['-hide_banner', '-loglevel', 'error', '-re', '-stream_loop', '-1', '-i', file],
      ...['-map', '0', '-c', 'copy', '-f', 'mpegts'],
      `udp://127.0.0.1:${port}?pkt_size=1316`,
    ],
    { stdio: 'ignore' },
  );
}

/** A bare node:http server answering every request with one Buffer (another process). */
async function bareNode(file: string, type: string): Promise<{ url: string; proc: ChildProcess }> {
  const port = await freePort();
  const code = `
    const http = require('node:http');
    const body = require('node:fs').readFileSync(${JSON.stringify(file)});
    http.createServer((req, res) => {
      res.writeHead(200, { 'Content-Type': ${JSON.stringify(type)}, 'Content-Length': body.length });
      res.end(body);
    }).listen(${port}, '127.0.0.1', () => process.stdout.write('up\\n'));`;
  const proc = spawn(process.execPath, ['-e', code], { stdio: ['ignore', 'pipe', 'inherit'] });
  await new Promise<void>((resolve, reject) => {
    proc.stdout!.once('data', () => resolve());
    proc.once('exit', () => reject(new Error('bare node server exited')));
  });
  return { url: `http://127.0.0.1:${port}/x`, proc };
}

function ratio(a: number, b: number): string {
  return `${(a / b).toFixed(2)}×`;
}

function verdict(r: number, goal: number): string {
  return `≥ ${goal}× ${r >= goal ? 'met' : 'missed'}`;
}

async function main(): Promise<void> {
  const cleanups: (() => unknown)[] = [];
  const t: Teardown = { teardown: (fn) => cleanups.push(fn) };
  const procs: ChildProcess[] = [];
  try {
    const big = `/tmp/sluice-bench-ott-big-${process.pid}.ts`;
    const small = `/tmp/sluice-bench-ott-small-${process.pid}.ts`;
    cleanups.push(() => execFileSync('rm', ['-f', big, small]));
    console.log('generating the feeds …');
    makeFile(big, BIG_KBPS, '1280x720');
    makeFile(small, HOLD_KBPS, '640x360');
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
    procs.push(feed(big, bigPort), feed(small, smallPort));
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
    const nginx = await startNginx(join(srv.dir, 'nginx'), root);
    cleanups.push(() => nginx.stop());
    const nodeSeg = await bareNode(join(root, 'seg.ts'), 'video/mp2t');
    const nodePl = await bareNode(join(root, 'index.m3u8'), 'application/vnd.apple.mpegurl');
    procs.push(nodeSeg.proc, nodePl.proc);

    const once = (url: string, c: number) => wrk(url, { seconds: WRK_S, connections: c });
    // Interleaved rounds, median by requests/s: the machine is shared, so one run can be unlucky.
    const contest = async (urls: (string | (() => Promise<string>))[], c: number) => {
      const runs: ReturnType<typeof wrk>[][] = urls.map(() => []);
      for (let i = 0; i < ROUNDS; i++)
        for (const [k, u] of urls.entries())
          runs[k]!.push(once(typeof u === 'string' ? u : await u(), c));
      return runs.map((rs) => [...rs].sort((a, b) => a.rps - b.rps)[rs.length >> 1]!);
    };
    // A live segment stays in the window 6 × 4 s: take the newest one before each run.
    const liveSeg = async () => {
      // wrk runs synchronously, so a kept-alive socket may have been closed by the server
      // without this process noticing: one retry takes a new connection.
      const r = await fetch(playlist).catch(() => fetch(playlist));
      const uris = (await r.text()).match(/^seg-[0-9a-f]+\.ts$/gm) ?? [];
      return `${srv.url}/big/${uris[uris.length - 1] ?? segUri}`;
    };
    const [so, sn0, sb0] = await contest(
      [liveSeg, `http://127.0.0.1:${nginx.port}/seg.ts`, nodeSeg.url],
      SEGMENT_CONNECTIONS,
    );
    const [po, pn0, pb0] = await contest(
      [playlist, `http://127.0.0.1:${nginx.port}/index.m3u8`, nodePl.url],
      PLAYLIST_CONNECTIONS,
    );
    const s = { ours: so!, nginx: sn0!, node: sb0! };
    const p = { ours: po!, nginx: pn0!, node: pb0! };
    console.log(
      `segment ${segBytes.length} bytes (${SEGMENT_CONNECTIONS} connections), playlist ${plText.length} bytes (${PLAYLIST_CONNECTIONS} connections), wrk -t1 ${WRK_S} s each, median of ${ROUNDS} interleaved rounds`,
    );
    console.log('| wrk run | req/s | p50 | p99 | transfer MB/s |');
    console.log('|---|---|---|---|---|');
    const row = (name: string, f: ReturnType<typeof wrk>) =>
      console.log(
        `| ${name} | ${f.rps.toFixed(0)} | ${f.p50Ms.toFixed(2)} ms | ${f.p99Ms.toFixed(2)} ms | ${f.mbPerSec.toFixed(0)} |`,
      );
    row('sluice live segment', s.ours);
    row('nginx, same bytes from a file', s.nginx);
    row('bare node:http, same Buffer', s.node);
    row('sluice live playlist', p.ours);
    row('nginx, same playlist from a file', p.nginx);
    row('bare node:http, same playlist', p.node);
    const sn = s.ours.rps / s.nginx.rps;
    const sb = s.ours.rps / s.node.rps;
    const pn = p.ours.rps / p.nginx.rps;
    console.log(
      `segment / nginx ${ratio(s.ours.rps, s.nginx.rps)} (${verdict(sn, GOAL_SEG_NGINX)})`,
    );
    console.log(
      `segment / node:http ${ratio(s.ours.rps, s.node.rps)} (${verdict(sb, GOAL_SEG_NODE)})`,
    );
    console.log(
      `playlist / nginx (1 worker = 1 core; sluice 1 process) ${ratio(p.ours.rps, p.nginx.rps)} (${verdict(pn, GOAL_PLAYLIST_NGINX)})`,
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
