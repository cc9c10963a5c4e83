// Test helpers for the stream engine: a small Host, an HTTP server dispatching `/{name}/…`
// through the OTT router like the real app, a TS fixture made by ffmpeg, child-process peers
// that are killed on teardown, and bounded waits.
import { type ChildProcess, spawn, spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import Fastify, { type FastifyInstance } from 'fastify';
import { applyDefaultsAt } from '../../src/config/defaults.ts';
import { kindSchema } from '../../src/config/schema.ts';
import type { StreamApplied } from '../../src/config/spec-types.generated.ts';
import type { Resource } from '../../src/config/types.ts';
import { StreamDriver } from '../../src/drivers/stream/driver.ts';
import type { StreamInstance } from '../../src/drivers/stream/instance.ts';
import { silentLogger } from '../../src/log.ts';
import { answerOtherMethod, delivers } from '../../src/ott/methods.ts';
import { OTT_ROUTER_SERVICE, OttRouter } from '../../src/ott/router.ts';
import type { Host } from '../../src/reconciler/driver.ts';
import { systemClock } from '../../src/util/clock.ts';
import { Services } from '../../src/util/services.ts';

export interface TapLike {
  teardown(fn: () => unknown): void;
}

export function tempDir(t: TapLike, prefix = 'sluice-stream-'): string {
  const dir = mkdtempSync(join(tmpdir(), prefix));
  t.teardown(() => rmSync(dir, { recursive: true, force: true }));
  return dir;
}

export function makeHost(dataDir: string): Host & { router: OttRouter } {
  const router = new OttRouter();
  const services = new Services().set(OTT_ROUTER_SERVICE, router);
  return {
    log: silentLogger,
    clock: systemClock,
    dataDir,
    lookup: () => undefined,
    services,
    router,
  };
}

/** A Fastify app with the catch-all `/{name}/*` route the real API has; returns its base URL. */
export async function httpFor(t: TapLike, router: OttRouter): Promise<string> {
  const app: FastifyInstance = Fastify();
  app.get('/:name/*', (req, reply) => {
    const { name, '*': rest } = req.params as { name: string; '*': string };
    const h = router.lookup(name);
    if (!h) return reply.code(404).send({ status: 404, message: 'no such stream' });
    return delivers(req) ? h(req, reply, rest) : answerOtherMethod(req, reply);
  });
  await app.listen({ port: 0, host: '127.0.0.1' });
  t.teardown(() => app.close());
  const addr = app.server.address();
  if (!addr || typeof addr === 'string') throw new Error('no address');
  return `http://127.0.0.1:${addr.port}`;
}

/** A stream resource as the reconciler hands it over: the test's members over quick-test
 *  settings, then every schema default applied (src/config/desired.ts does the same). */
export function streamResource(spec: Record<string, unknown>): Resource<StreamApplied> {
  const full: Record<string, unknown> = {
    id: 0,
    pause: false,
    'stream-timeout': 1_000_000,
    'check-interval': 10_000_000,
    'fallback-check': true,
    'ott-http': 1,
    'failover-error-rate': 20,
    'failover-error-window': 2,
    ...spec,
  };
  return {
    kind: 'stream',
    key: `name:${full['stream-name']}`,
    name: String(full['stream-name']),
    pointer: '/stream/0',
    spec: applyDefaultsAt(kindSchema('stream'), full) as StreamApplied,
    deps: [],
  };
}

/** A free UDP/TCP port on loopback. */
export async function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const s = createServer();
    s.once('error', reject);
    s.listen(0, '127.0.0.1', () => {
      const a = s.address();
      s.close(() => resolve(typeof a === 'object' && a ? a.port : 0));
    });
  });
}

/** A 10 s H.264 + AAC TS with video PID 0x100 (256), audio 0x101 (257), PMT 0x1000. */
export function makeFixture(dir: string, seconds = 10): string {
  const out = join(dir, 'fixture.ts');
  const r = spawnSync('ffmpeg', [
    '-hide_banner',
    '-loglevel',
    'error',
    '-y',
    '-f',
    'lavfi',
    '-i',
    `testsrc2=size=320x240:rate=25:duration=${seconds}`,
    '-f',
    'lavfi',
    '-i',
    `sine=frequency=440:sample_rate=48000:duration=${seconds}`,
    '-c:v',
    'libx264',
    '-preset',
    'ultrafast',
    '-g',
    '25',
    '-b:v',
    '500k',
    '-c:a',
    'aac',
    '-b:a',
    '64k',
    '-streamid',
    '0:256',
    '-streamid',
    '1:257',
    '-f',
    'mpegts',
    out,
  ]);
  if (r.status !== 0) throw new Error(`fixture: ${r.stderr}`);
  return out;
}

const streamDriver = new StreamDriver();

/**
 * A stream on `host` from a partial record (completed by streamResource), closed when `t`
 * ends; with `runningWithinMs`, waits until it runs (and fails the wait after that long).
 */
export async function openStream(
  t: TapLike,
  host: Host,
  spec: Record<string, unknown>,
  runningWithinMs?: number,
): Promise<StreamInstance> {
  const inst = (await streamDriver.create(streamResource(spec), host)) as StreamInstance;
  t.teardown(() => inst.close());
  if (runningWithinMs !== undefined) {
    const name = String(spec['stream-name'] ?? '');
    await waitFor(() => inst.state() === 'running', runningWithinMs, `${name} running`);
  }
  return inst;
}

/**
 * Streams that read each other's buses (demuxer, muxer, transcoder): each stream opened by
 * `open` is found by `host.lookup('stream', id)`, as the stream driver registry finds it in the
 * server, and closed (and forgotten) when `t` ends or by `close`. `extra` answers keys of its
 * own first (a crafted bus standing in for a stream).
 */
export function streamSet(
  t: TapLike,
  host: Host,
  extra?: (key: string) => unknown,
): {
  open(spec: Record<string, unknown>): Promise<StreamInstance>;
  close(key: string, s: StreamInstance): Promise<void>;
} {
  const instances = new Map<string, StreamInstance>();
  host.lookup = (<T>(kind: string, key: string) =>
    kind === 'stream'
      ? ((extra?.(key) ?? instances.get(key)) as T)
      : undefined) as typeof host.lookup;
  const close = async (key: string, s: StreamInstance) => {
    if (instances.get(key) === s) instances.delete(key);
    await s.close();
  };
  return {
    async open(spec) {
      const res = streamResource(spec);
      if (typeof spec['id'] === 'number') res.key = String(spec['id']);
      const s = (await streamDriver.create(res, host)) as StreamInstance;
      instances.set(res.key, s);
      t.teardown(() => close(res.key, s));
      return s;
    },
    close,
  };
}

/** Start a peer process, killed on teardown. */
export function peer(t: TapLike, cmd: string, args: string[]): ChildProcess {
  const p = spawn(cmd, args, { stdio: ['ignore', 'ignore', 'pipe'] });
  p.stderr?.resume();
  t.teardown(() => {
    if (p.exitCode === null && p.signalCode === null) p.kill('SIGKILL');
  });
  return p;
}

/** ffmpeg looping the fixture in real time, copying streams and PIDs, to `url` as `format`. */
export function playFixture(
  t: TapLike,
  fixture: string,
  format: string,
  url: string,
): ChildProcess {
  return peer(t, 'ffmpeg', [
    '-hide_banner',
    '-loglevel',
    'error',
    '-y',
    '-re',
    '-stream_loop',
    '-1',
    '-i',
    fixture,
    '-map',
    '0',
    '-c',
    'copy',
    '-copyts',
    '-mpegts_copyts',
    '1',
    '-streamid',
    '0:256',
    '-streamid',
    '1:257',
    '-f',
    format,
    url,
  ]);
}

export interface ProbedStream {
  index: number;
  codec_name: string;
  codec_type: string;
  id: string;
}

/** ffprobe a URL or file; returns its streams (id is the PID, e.g. `0x100`). */
export async function ffprobe(url: string, timeoutMs = 15_000): Promise<ProbedStream[]> {
  return new Promise((resolve, reject) => {
    const p = spawn(
      'ffprobe',
      ['-v', 'error', '-show_streams', '-of', 'json', '-rw_timeout', '8000000', url],
      {
        stdio: ['ignore', 'pipe', 'pipe'],
      },
    );
    let out = '';
    let err = '';
    p.stdout.on('data', (d) => (out += d));
    p.stderr.on('data', (d) => (err += d));
    const timer = setTimeout(() => p.kill('SIGKILL'), timeoutMs);
    p.on('close', (code) => {
      clearTimeout(timer);
      if (code !== 0) return reject(new Error(`ffprobe ${url}: ${code} ${err}`));
      resolve((JSON.parse(out) as { streams: ProbedStream[] }).streams);
    });
  });
}

/** Poll `fn` until it returns a truthy value or `timeoutMs` passes. */
export async function waitFor<T>(
  fn: () => T | Promise<T>,
  timeoutMs: number,
  what: string,
): Promise<T> {
  const end = Date.now() + timeoutMs;
  for (;;) {
    const v = await fn();
    if (v) return v;
    if (Date.now() > end) throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 50));
  }
}

/** First audio PTS minus first video PTS (seconds) of the first packets ffprobe reads (run
 *  asynchronously: the server under test is often in this process). */
export async function avOffset(url: string): Promise<number> {
  const out = await new Promise<string>((resolve, reject) => {
    const p = spawn(
      'ffprobe',
      [
        ...['-v', 'error', '-rw_timeout', '8000000', '-read_intervals', '%+#80'],
        ...['-show_entries', 'packet=codec_type,pts', '-of', 'json', url],
      ],
      { stdio: ['ignore', 'pipe', 'ignore'] },
    );
    let text = '';
    p.stdout.on('data', (d) => (text += d));
    const timer = setTimeout(() => p.kill('SIGKILL'), 20_000);
    p.on('close', (code) => {
      clearTimeout(timer);
      if (code === 0) resolve(text);
      else reject(new Error(`ffprobe ${url}: ${code}`));
    });
  });
  const p = (JSON.parse(out) as { packets: { codec_type: string; pts: number }[] }).packets;
  const first = (k: string) => Math.min(...p.filter((x) => x.codec_type === k).map((x) => x.pts));
  return (first('audio') - first('video')) / 90000;
}
