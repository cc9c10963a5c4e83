// Benchmark: transcoding overhead — the ffmpeg command a `transcoder` input builds, run by hand,
// beside the same command run by sluice. The job: a 1080i source (testsrc2 1920×1080 coded as
// interlaced MPEG-2, MP2 audio, muxed at a constant 10 Mbit/s) → 720p H.264 at 2 Mbit/s
// constant (ultrafast, GOP 50, 2 B-frames, deinterlaced), MP2 → AAC, as in
// test/stream/transcoder-acceptance.test.ts — played at real time and served to one HTTP client.
// - By hand: `ffmpeg <argv>` with the encoding argv of src/inputs/transcoder/args.ts for that
//   record and the source's programme, the peer doing the whole job itself at its best: it reads
//   the source file at real time (`-re -i <file>` in place of `-i pipe:0`) and serves its output
//   to one HTTP client (`-listen 1 -chunked_post 0 http://…` in place of `pipe:1`; chunked
//   encoding off: one write per flush, fewer than sluice's chunked response); this process is
//   the client. Progress on fd 3 as under sluice.
// - Through sluice (a child process): a `file` stream plays the same file at real time (paced by
//   its PCR), a `transcoder` stream encodes it (the same argv but for its two ends: checked
//   against the running encoder's /proc/<pid>/cmdline), and one HTTP-TS client (this process)
//   reads its output.
// Equal work (issue 15's rule): the same source read at the same real-time rate, the same
// encoding argv on the same bytes, the output delivered to one HTTP client; CPU of everything
// doing that job is charged — by hand ffmpeg, through sluice its ffmpeg + the sluice process
// (which also analyses both streams and passes the bytes through pipes). Before 2026-11-28 the
// hand side's ffmpeg was fed by this process from memory and wrote to a pipe this process read,
// neither charged, while sluice's side paid for reading and pacing the file and serving the
// client (History, bench/RESULTS.md). CPU: utime + stime from /proc/<pid>/stat over the same
// window after a warm-up. Ratio = sluice side / by hand; goal ≤ 1.05×. Sides alternate (hand,
// sluice, hand …) so load drift hits both. With SLUICE_BENCH_SOURCE_ONLY=1 a third side runs
// each round: the sluice child with the file stream alone (no transcoder, no client), what the
// source stream costs sluice by itself (for the reading of where sluice's share goes).
// Warm-up: 40 s by default. ffmpeg is at its steady cost within seconds; sluice's V8 goes on
// compiling its hot functions for about a minute (perf of the sluice process 12–42 s after it
// was ready: 11.6 % of its samples were TurboFan compile jobs), and after a 6 s warm-up that
// one-off cost was charged as overhead (sluice's process 1.26–1.45 s per 30 s against 0.91–1.02
// s after 40 s). A server transcodes for days: the steady state is the figure.
// Run: [SLUICE_BENCH_SPEED=7] [SLUICE_BENCH_WARMUP_S=40] [SLUICE_BENCH_SOURCE_ONLY=1] [SLUICE_BENCH_NODE_FLAGS=…]
//      flock /tmp/sluice-bench.lock npx tsx bench/transcode.ts [seconds=30] [rounds=2] — SLUICE_BENCH_SPEED is enc-speed-preset (7 ultrafast … 4 fast, 1 veryslow).
// Figures: printed; copy them to bench/RESULTS.md.
import { type ChildProcess, execFileSync, spawn } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import http from 'node:http';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { createInterface } from 'node:readline';
import type { Readable, Writable } from 'node:stream';
import { answerOtherMethod, delivers } from '../src/ott/methods.ts';
import { benchHeader } from './lib/header.ts';
import { sluiceNodeFlags } from './lib/proc.ts';

const HZ = Number(execFileSync('getconf', ['CLK_TCK'], { encoding: 'utf8' }).trim()) || 100;
const WARMUP_MS = Number(process.env['SLUICE_BENCH_WARMUP_S'] ?? 40) * 1000;
const MUX_BPS = 10_000_000;
const SOURCE_ONLY = process.env['SLUICE_BENCH_SOURCE_ONLY'] === '1';
const NAME = 'hd720';
/** The transcoder record (stream 2's input); the source is stream 1. */
const RECORD = {
  type: 'transcoder',
  'decoder-id': 1,
  'enc-type': 1,
  'enc-speed-preset': Number(process.env['SLUICE_BENCH_SPEED'] ?? 7),
  'enc-video-bitrate': 2000,
  'enc-video-bitrate-mode': 0,
  'enc-width': 1280,
  'enc-height': 720,
  'enc-deinterlace': true,
  'enc-gop-interval': 50,
  'enc-bframe': 2,
  'enc-aud-rule-mpeg': 'aac',
  'enc-aud-bitrate': 128,
};
/** The file's programme as ffmpeg's muxer lays it out (checked: the argv must match sluice's). */
const PROGRAMME = {
  programNumber: 1,
  pmtPid: 0x1000,
  videoPid: 0x100,
  audio: [{ pid: 0x101, codec: 'mpeg' as const }],
  subtitles: [],
};

const live = new Set<ChildProcess>();
let work = '';
function track(cp: ChildProcess): ChildProcess {
  live.add(cp);
  cp.on('exit', () => live.delete(cp));
  return cp;
}
function cleanUp(): void {
  for (const cp of live) cp.kill('SIGKILL');
  live.clear();
  if (work) rmSync(work, { recursive: true, force: true });
  work = '';
}

/** CPU seconds of a process, all threads: user + system. */
function procCpu(pid: number): number {
  try {
    const s = readFileSync(`/proc/${pid}/stat`, 'utf8');
    const f = s.slice(s.lastIndexOf(')') + 2).split(' ');
    return (Number(f[11]) + Number(f[12])) / HZ;
  } catch {
    return 0;
  }
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** The argv sluice builds for RECORD on PROGRAMME (the stream's name is the service name). */
async function handArgv(): Promise<string[]> {
  const { applyDefaultsAt } = await import('../src/config/defaults.ts');
  const { kindSchema } = await import('../src/config/schema.ts');
  const { transcoderArgs } = await import('../src/inputs/transcoder/args.ts');
  const spec = applyDefaultsAt(kindSchema('stream'), {
    id: 2,
    'stream-name': NAME,
    input: [RECORD],
  }) as { input: Record<string, unknown>[] };
  return transcoderArgs(spec.input[0]!, PROGRAMME, NAME);
}

/** Child: stream 1 plays the file, stream 2 transcodes it, served over HTTP-TS. Prints
 *  `ready <port> <encoder pid>` once the encoder reports frames; on `report` a JSON line. */
async function child(file: string, sourceOnly: boolean): Promise<void> {
  const { default: Fastify } = await import('fastify');
  const { applyDefaultsAt } = await import('../src/config/defaults.ts');
  const { kindSchema } = await import('../src/config/schema.ts');
  const { OTT_ROUTER_SERVICE, OttRouter } = await import('../src/ott/router.ts');
  const { StreamDriver } = await import('../src/drivers/stream/driver.ts');
  const { silentLogger } = await import('../src/log.ts');
  const { systemClock } = await import('../src/util/clock.ts');
  const { Services } = await import('../src/util/services.ts');
  type Inst = import('../src/drivers/stream/instance.ts').StreamInstance;
  const router = new OttRouter();
  const instances = new Map<string, Inst>();
  // Inside the bench's work directory, removed with it.
  const dataDir = mkdtempSync(join(dirname(file), 'data-'));
  const host = {
    log: silentLogger,
    clock: systemClock,
    dataDir,
    lookup: (<T>(kind: string, key: string) =>
      kind === 'stream' ? (instances.get(key) as T) : undefined) as <T>(
      kind: string,
      key: string,
    ) => T | undefined,
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
  for (const spec of [
    { id: 1, 'stream-name': 'src', input: [{ type: 'file', 'file-path': file }] },
    ...(sourceOnly ? [] : [{ id: 2, 'stream-name': NAME, input: [RECORD] }]),
  ]) {
    const full = { pause: false, 'ott-http': 1, ...spec };
    const res = {
      kind: 'stream' as const,
      key: String(spec.id),
      name: spec['stream-name'],
      pointer: '',
      spec: applyDefaultsAt(kindSchema('stream'), full) as never,
      deps: [],
    };
    instances.set(res.key, (await driver.create(res, host as never)) as Inst);
  }
  if (sourceOnly) {
    const src = instances.get('1')!;
    while (src.state() !== 'running') await sleep(100);
    console.log('ready 0 0');
    createInterface({ input: process.stdin }).on('line', (line) => {
      console.log(line === 'report' ? '{}' : '0');
      if (line === 'report') process.exit(0);
    });
    return;
  }
  const tc = instances.get('2')!;
  const transport = () =>
    ((tc.status()['inputs'] as { transport?: Record<string, unknown> }[])[0]?.transport ??
      {}) as Record<string, unknown>;
  for (;;) {
    const e = transport()['encoder'] as { frames: number } | undefined;
    if (tc.state() === 'running' && e && e.frames > 0) break;
    await sleep(100);
  }
  console.log(`ready ${(app.server.address() as { port: number }).port} ${transport()['pid']}`);
  createInterface({ input: process.stdin }).on('line', (line) => {
    if (line === 'frames') {
      console.log(String((transport()['encoder'] as { frames: number }).frames));
      return;
    }
    if (line !== 'report') return;
    const tr = transport();
    console.log(
      JSON.stringify({
        restarts: tr['restarts'],
        droppedBytes: tr['droppedBytes'],
        encoder: tr['encoder'],
      }),
    );
    process.exit(0);
  });
}

interface Side {
  cpu: number;
  encoderCpu: number;
  frames: number;
  wall: number;
  outBytes: number;
  note: string;
}

/** A free TCP port on loopback (for ffmpeg's HTTP server). */
async function freePort(): Promise<number> {
  const srv = http.createServer();
  await new Promise<void>((r) => srv.listen(0, '127.0.0.1', r));
  const { port } = srv.address() as { port: number };
  await new Promise((r) => srv.close(r));
  return port;
}

/** The hand argv: sluice's with its two ends changed — the file read at real time, not stdin;
 *  the output served to one HTTP client, not written to stdout. */
function handEnds(argv: string[], file: string, url: string): string[] {
  const i = argv.indexOf('pipe:0');
  const o = argv.lastIndexOf('pipe:1');
  if (i < 3 || argv[i - 1] !== '-i' || argv[i - 3] !== '-f' || o !== argv.length - 1)
    throw new Error('the transcoder argv does not read pipe:0 and write pipe:1 as expected');
  return [
    ...argv.slice(0, i - 3),
    ...['-re', ...argv.slice(i - 3, i), file],
    ...argv.slice(i + 1, o),
    ...['-listen', '1', '-chunked_post', '0', url],
  ];
}

/** By hand: ffmpeg reading the file at real time and serving one HTTP client (this process). */
async function handSide(file: string, argv: string[], seconds: number): Promise<Side> {
  const port = await freePort();
  const args = handEnds(argv, file, `http://127.0.0.1:${port}/`);
  const cp = track(spawn('ffmpeg', args, { stdio: ['ignore', 'ignore', 'inherit', 'pipe'] }));
  let frames = 0;
  createInterface({ input: cp.stdio[3] as Readable }).on('line', (l) => {
    if (l.startsWith('frame=')) frames = Number(l.slice(6));
  });
  let outBytes = 0;
  let req: http.ClientRequest | null = null;
  // ffmpeg listens once its input is probed: try until it answers.
  for (let tries = 0; !req; tries++) {
    if (tries > 200) throw new Error('ffmpeg did not start its HTTP server');
    req = await new Promise<http.ClientRequest | null>((resolve) => {
      const r = http.get(`http://127.0.0.1:${port}/`, (res) => {
        res.on('data', (d: Buffer) => (outBytes += d.length));
        resolve(r);
      });
      r.on('error', () => resolve(null));
    });
    if (!req) await sleep(50);
  }
  await sleep(WARMUP_MS);
  const c0 = procCpu(cp.pid!);
  const f0 = frames;
  const o0 = outBytes;
  const w0 = performance.now();
  await sleep(seconds * 1000);
  const cpu = procCpu(cp.pid!) - c0;
  const wall = (performance.now() - w0) / 1000;
  const side = {
    cpu,
    encoderCpu: cpu,
    frames: frames - f0,
    wall,
    outBytes: outBytes - o0,
    note: 'reads the file (-re), serves the client',
  };
  req.destroy();
  cp.kill('SIGKILL');
  await new Promise((r) => (cp.exitCode === null ? cp.once('exit', r) : r(null)));
  return side;
}

/** Through sluice: the child's streams; CPU of the child and of its encoder. */
async function sluiceSide(
  file: string,
  argv: string[],
  seconds: number,
  sourceOnly = false,
): Promise<Side> {
  const mode = sourceOnly ? ['source'] : [];
  // SLUICE_BENCH_NODE_FLAGS (e.g. `--cpu-prof --cpu-prof-dir=DIR`); V8's traces (`--trace-gc`…)
  // print to stdout, where the child answers the bench: run the child by hand for those.
  const cp = track(
    spawn(
      process.execPath,
      [...sluiceNodeFlags, '--import', 'tsx', import.meta.filename, 'child', file, ...mode],
      {
        stdio: ['pipe', 'pipe', 'inherit'],
      },
    ),
  );
  const lines = createInterface({ input: cp.stdout as Readable });
  const next = () => new Promise<string>((r) => lines.once('line', r));
  const [, port, pidText] = (await next()).split(' ');
  const encPid = Number(pidText);
  if (sourceOnly) {
    await sleep(WARMUP_MS);
    const c0 = procCpu(cp.pid!);
    const w0 = performance.now();
    await sleep(seconds * 1000);
    const cpu = procCpu(cp.pid!) - c0;
    const wall = (performance.now() - w0) / 1000;
    cp.kill('SIGKILL');
    return { cpu, encoderCpu: 0, frames: 0, wall, outBytes: 0, note: 'the file stream alone' };
  }
  const cmdline = readFileSync(`/proc/${encPid}/cmdline`, 'utf8').split('\0').slice(1, -1);
  // The same argv, ends and all: the hand side changes only its two ends (handEnds).
  if (JSON.stringify(cmdline) !== JSON.stringify(argv))
    throw new Error(`the encoder's argv differs from the hand one:\n${cmdline.join(' ')}`);
  let outBytes = 0;
  const req = http.get(`http://127.0.0.1:${port}/${NAME}/mpegts`, (res) =>
    res.on('data', (d: Buffer) => (outBytes += d.length)),
  );
  req.on('error', () => undefined);
  const ask = async (cmd: string) => {
    const p = next();
    (cp.stdin as Writable).write(`${cmd}\n`);
    return p;
  };
  await sleep(WARMUP_MS);
  const s0 = procCpu(cp.pid!);
  const e0 = procCpu(encPid);
  const f0 = Number(await ask('frames'));
  const o0 = outBytes;
  const w0 = performance.now();
  await sleep(seconds * 1000);
  const s1 = procCpu(cp.pid!);
  const e1 = procCpu(encPid);
  const f1 = Number(await ask('frames'));
  const wall = (performance.now() - w0) / 1000;
  const out = outBytes - o0;
  const report = JSON.parse(await ask('report')) as Record<string, unknown>;
  req.destroy();
  await new Promise((r) => (cp.exitCode === null ? cp.once('exit', r) : r(null)));
  return {
    cpu: s1 - s0 + (e1 - e0),
    encoderCpu: e1 - e0,
    frames: f1 - f0,
    wall,
    outBytes: out,
    note: `sluice ${(s1 - s0).toFixed(2)} s; restarts ${report['restarts']}, source bytes dropped ${report['droppedBytes']}`,
  };
}

async function main(): Promise<void> {
  benchHeader('transcode');
  const seconds = Number(process.argv[2] ?? 30);
  const rounds = Number(process.argv[3] ?? 2);
  work = mkdtempSync(join(tmpdir(), 'sluice-bench-transcode-'));
  const file = join(work, '1080i.ts');
  const length = Math.ceil(WARMUP_MS / 1000 + seconds + 6);
  execFileSync('ffmpeg', [
    ...['-hide_banner', '-loglevel', 'error', '-y'],
    ...['-f', 'lavfi', '-i', 'testsrc2=size=1920x1080:rate=50'],
    ...['-f', 'lavfi', '-i', 'sine=frequency=1000:sample_rate=48000'],
    ...['-t', String(length), '-vf', 'tinterlace=mode=interleave_top,setfield=tff'],
    ...['-c:v', 'mpeg2video', '-flags', '+ilme+ildct', '-top', '1', '-g', '25'],
    ...['-b:v', '6M', '-maxrate', '7M', '-bufsize', '3M'],
    ...['-c:a', 'mp2', '-b:a', '192k', '-muxrate', String(MUX_BPS), '-f', 'mpegts', file],
  ]);
  const argv = await handArgv();
  console.log(`ffmpeg ${argv.join(' ')}`);
  console.log(`source ${length} s, window ${seconds} s after ${WARMUP_MS / 1000} s warm-up`);
  const rows: string[] = [];
  let hand = 0;
  let through = 0;
  let source = 0;
  for (let r = 1; r <= rounds; r++) {
    const h = await handSide(file, argv, seconds);
    const s = await sluiceSide(file, argv, seconds);
    const o = SOURCE_ONLY ? await sluiceSide(file, argv, seconds, true) : null;
    hand += h.cpu;
    through += s.cpu;
    source += o?.cpu ?? 0;
    const sides: [string, Side][] = [
      ['by hand', h],
      ['sluice', s],
    ];
    if (o) sides.push(['source only', o]);
    for (const [name, x] of sides) {
      const line =
        `${r} | ${name} | ${x.cpu.toFixed(2)} | ${x.encoderCpu.toFixed(2)} | ` +
        `${((100 * x.cpu) / x.wall).toFixed(1)} | ${(x.frames / x.wall).toFixed(1)} | ` +
        `${((x.outBytes * 8) / x.wall / 1e6).toFixed(2)} | ${x.note}`;
      rows.push(line);
      console.log(line);
    }
    console.log(
      `round ${r}: ratio ${(s.cpu / h.cpu).toFixed(3)}×` +
        (o ? `; sluice's file stream alone ${o.cpu.toFixed(2)} s` : ''),
    );
  }
  console.log('| round | side | CPU s | ffmpeg CPU s | % of a core | fps | out Mbit/s | note |');
  console.log('|---|---|---|---|---|---|---|---|');
  for (const l of rows) console.log(`| ${l} |`);
  console.log(`ratio (sums over ${rounds} rounds): ${(through / hand).toFixed(3)}× (goal ≤ 1.05×)`);
  if (SOURCE_ONLY) console.log(`sluice's file stream alone: ${source.toFixed(2)} s in all`);
}

process.on('SIGINT', () => {
  cleanUp();
  process.exit(130);
});
if (process.argv[2] === 'child') await child(process.argv[3]!, process.argv[4] === 'source');
else {
  try {
    await main();
  } finally {
    cleanUp();
  }
}
