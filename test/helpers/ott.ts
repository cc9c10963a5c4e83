// Test helpers for the OTT packager: an ffmpeg-made test stream, a tiny stream bus to feed
// it, and a real HTTP server on a free loopback port that forwards `/{name}/…` like the API's
// OTT router does.
import { type ChildProcess, execFile, spawn } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { readFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import Fastify, { type FastifyInstance, type FastifyReply, type FastifyRequest } from 'fastify';
import type { BusSink, StreamBus } from '../../src/engine/bus.ts';
import { answerOtherMethod, delivers } from '../../src/ott/methods.ts';
import type { OttService } from '../../src/ott/types.ts';
import { waitFor } from './server.ts';

const run = promisify(execFile);
export const TS_CHUNK = 188 * 7;

export class TinyBus implements StreamBus {
  sinks = new Set<BusSink>();
  subscribe(sink: BusSink): () => void {
    this.sinks.add(sink);
    return () => this.sinks.delete(sink);
  }
  push(buf: Buffer): void {
    for (let o = 0; o < buf.length; o += TS_CHUNK) {
      const chunk = buf.subarray(o, Math.min(buf.length, o + TS_CHUNK));
      for (const s of this.sinks) s.packets(chunk);
    }
  }
  discontinuity(reason = 'test'): void {
    for (const s of this.sinks) s.discontinuity?.(reason);
  }
}

export interface TestStreamOptions {
  seconds: number;
  /** Keyframe interval in frames (25 fps). */
  gop?: number;
  audio?: 'aac' | 'ac3' | 'mp2' | 'none';
  video?: 'h264' | 'hevc';
  /** Second audio track (language `fra`). */
  twoAudio?: boolean;
  bframes?: boolean;
  /** Initial timestamp offset in seconds (e.g. near the 33-bit wrap). */
  offset?: number;
}

export function tempDir(prefix = 'sluice-ott-'): { dir: string; remove: () => void } {
  const dir = mkdtempSync(join(tmpdir(), prefix));
  return { dir, remove: () => rmSync(dir, { recursive: true, force: true }) };
}

/** ffmpeg arguments producing a test stream (testsrc2 + sine) as MPEG-TS. */
export function testStreamArgs(o: TestStreamOptions): string[] {
  const gop = o.gop ?? 25;
  const audio = o.audio ?? 'aac';
  const args = [
    '-hide_banner',
    '-loglevel',
    'error',
    '-f',
    'lavfi',
    '-i',
    `testsrc2=size=320x180:rate=25:duration=${o.seconds}`,
  ];
  if (audio !== 'none')
    args.push('-f', 'lavfi', '-i', `sine=frequency=440:sample_rate=48000:duration=${o.seconds}`);
  if (o.twoAudio)
    args.push('-f', 'lavfi', '-i', `sine=frequency=880:sample_rate=48000:duration=${o.seconds}`);
  args.push('-map', '0:v');
  if (audio !== 'none') args.push('-map', '1:a');
  if (o.twoAudio) args.push('-map', '2:a');
  if (o.video === 'hevc')
    args.push(
      '-c:v',
      'libx265',
      '-x265-params',
      `keyint=${gop}:min-keyint=${gop}:log-level=error`,
      '-tag:v',
      'hvc1',
    );
  else
    args.push(
      '-c:v',
      'libx264',
      '-profile:v',
      'main',
      '-g',
      String(gop),
      '-keyint_min',
      String(gop),
      '-sc_threshold',
      '0',
    );
  args.push('-preset', 'veryfast', '-pix_fmt', 'yuv420p', '-b:v', '600k');
  if (!o.bframes) args.push('-bf', '0');
  if (audio !== 'none') {
    const codec = audio === 'mp2' ? 'mp2' : audio === 'ac3' ? 'ac3' : 'aac';
    args.push('-c:a', codec, '-b:a', '128k', '-metadata:s:a:0', 'language=eng');
    if (o.twoAudio) args.push('-metadata:s:a:1', 'language=fra');
  }
  if (o.offset !== undefined) args.push('-output_ts_offset', String(o.offset));
  args.push('-f', 'mpegts');
  return args;
}

export async function makeTestStream(file: string, o: TestStreamOptions): Promise<Buffer> {
  await run('ffmpeg', ['-y', ...testStreamArgs(o), file], { maxBuffer: 1 << 26 });
  return readFile(file);
}

/** A live ffmpeg generator (-re) writing TS to stdout, pushed onto the bus while `active()`. */
export function liveGenerator(
  bus: TinyBus,
  o: TestStreamOptions,
  active: () => boolean = () => true,
): ChildProcess {
  const args = ['-re', ...testStreamArgs(o), 'pipe:1'];
  const child = spawn('ffmpeg', args, { stdio: ['ignore', 'pipe', 'inherit'] });
  let rest = Buffer.alloc(0);
  child.stdout!.on('data', (d: Buffer) => {
    const all = rest.length ? Buffer.concat([rest, d]) : d;
    const n = all.length - (all.length % 188);
    if (active()) bus.push(all.subarray(0, n));
    rest = Buffer.from(all.subarray(n));
  });
  return child;
}

/** A Fastify server with the OTT catch-all, forwarding to `services` by stream name. */
export async function startOttServer(
  services: Map<string, OttService>,
  staticFiles: Record<string, { path: string; type: string }> = {},
): Promise<{ app: FastifyInstance; base: string }> {
  const app = Fastify({ logger: false });
  for (const [url, f] of Object.entries(staticFiles)) {
    app.get(url, async (_req, reply) => reply.type(f.type).send(await readFile(f.path)));
  }
  const handler = (req: FastifyRequest, reply: FastifyReply) => {
    const { name, '*': rest } = req.params as { name: string; '*': string };
    const svc = services.get(name);
    if (!svc) return reply.code(404).send({ status: 404, message: 'no such stream' });
    return delivers(req) ? svc.handle(req, reply, rest) : answerOtherMethod(req, reply);
  };
  app.route({
    method: ['GET', 'HEAD', 'OPTIONS'],
    url: '/:name/*',
    handler,
    exposeHeadRoute: false,
  });
  const addr = await app.listen({ host: '127.0.0.1', port: 0 });
  return { app, base: addr };
}

export async function ffprobeJson(
  url: string,
  extra: string[] = [],
): Promise<Record<string, unknown>> {
  const { stdout } = await run(
    'ffprobe',
    ['-v', 'error', '-of', 'json', '-show_streams', '-show_format', ...extra, url],
    { timeout: 30_000, maxBuffer: 1 << 26 },
  );
  return JSON.parse(stdout) as Record<string, unknown>;
}

/**
 * A server config with one live HLS-TS stream `live` (1 s segments) from the test generator,
 * small and fast to start; `httpServer` is merged into the `http-server` record.
 */
/** A `test` input of a small picture with one key frame a second: cheap, quick segments. */
export const KEYFRAME_EVERY_SECOND_INPUT = {
  type: 'test',
  width: 320,
  height: 180,
  'frame-rate': 25,
  'gop-interval': 25,
  'video-bitrate': 300,
  'enable-overlay': false,
};

export function liveTsConfig(httpServer?: Record<string, unknown>): Record<string, unknown> {
  return {
    ...(httpServer ? { 'http-server': httpServer } : {}),
    stream: [
      {
        id: 1,
        'stream-name': 'live',
        pause: false,
        'ott-hls': 1,
        'ott-segment-duration': 1,
        input: [KEYFRAME_EVERY_SECOND_INPUT],
      },
    ],
  };
}

/** The URI of a segment in `/{name}/index.m3u8` once the stream lists one (`query` is appended
 *  to the playlist request, e.g. `?x=1` to take the app's path). */
export function firstLiveSegment(url: string, query = '', name = 'live'): Promise<string> {
  return waitFor(
    `a live segment of ${name}`,
    async () => {
      const r = await fetch(`${url}/${name}/index.m3u8${query}`).catch(() => undefined);
      if (!r?.ok) return undefined;
      return (await r.text()).match(/^seg-[0-9a-f]+\.ts$/m)?.[0];
    },
    40_000,
  );
}

/** Headers a playback response carries the same on every serving path (lower-case names). */
export const PLAYBACK_HEADERS = [
  'access-control-allow-origin',
  'access-control-expose-headers',
  'cache-control',
  'content-type',
  'accept-ranges',
  'content-length',
];

/** The native live engine's counters in a real server's http-server status (undefined when
 *  its HTTP listener has no engine: `native-delivery` false). */
export interface DeliveryStatus {
  /** Responses published to the engine now. */
  entries: number;
  adopted: number;
  served: number;
  handedBack: number;
}

export async function deliveryStatus(url: string): Promise<DeliveryStatus | undefined> {
  const st = (await (await fetch(`${url}/data/status`)).json()) as {
    resources: { kind: string; status?: Record<string, unknown> }[];
  };
  const http = st.resources.find((r) => r.kind === 'http-server');
  return http?.status?.['native-delivery'] as DeliveryStatus | undefined;
}
