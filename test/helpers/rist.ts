// Shared set-up of the RIST stream tests (test/stream/rist*.test.ts): a host with its own metrics
// registry and HTTP server, the ffmpeg fixture, RIST peers (ffmpeg's librist protocol and
// ristsender from rist-tools) killed on teardown, and status accessors.
import { createSocket } from 'node:dgram';
import { Registry } from 'prom-client';
import type { Test } from 'tap';
import { StreamDriver } from '../../src/drivers/stream/driver.ts';
import type { StreamInstance } from '../../src/drivers/stream/instance.ts';
import { METRICS_REGISTRY_SERVICE } from '../../src/drivers/stream/metrics.ts';
import {
  type ffprobe,
  freePort,
  httpFor,
  makeFixture,
  makeHost,
  peer,
  streamResource,
  tempDir,
  waitFor,
} from './stream-host.ts';

async function udpFree(port: number): Promise<boolean> {
  const s = createSocket('udp4');
  return new Promise((resolve) => {
    s.once('error', () => resolve(false));
    s.bind(port, '127.0.0.1', () => s.close(() => resolve(true)));
  });
}

/** An even UDP port whose next port is free as well (RIST simple profile: data + RTCP). */
export async function evenPortPair(): Promise<number> {
  for (let i = 0; i < 50; i++) {
    const p = (await freePort()) & ~1;
    if (p > 1024 && (await udpFree(p)) && (await udpFree(p + 1))) return p;
  }
  throw new Error('no even port pair free');
}

export type Status = Record<string, unknown>;
export const input0 = (s: StreamInstance): Status => (s.status()['inputs'] as Status[])[0]!;
export const transport = (s: StreamInstance): Status => input0(s)['transport'] as Status;
export const ccErrors = (s: StreamInstance): number =>
  Number((input0(s)['tr101290'] as Status | undefined)?.['continuityCountError'] ?? 0);

export function expectSource(t: Test, streams: Awaited<ReturnType<typeof ffprobe>>): void {
  const v = streams.find((s) => s.codec_type === 'video');
  const a = streams.find((s) => s.codec_type === 'audio');
  t.equal(v?.codec_name, 'h264', 'H.264 video');
  t.equal(a?.codec_name, 'aac', 'AAC audio');
  t.equal(v?.id, '0x100', 'video keeps its source PID');
  t.equal(a?.id, '0x101', 'audio keeps its source PID');
}

/** The host, driver and peers of one test file. */
export async function ristHarness(t: Test) {
  const dir = tempDir(t);
  const fixture = makeFixture(dir);
  const host = makeHost(dir);
  const registry = new Registry();
  host.services.set(METRICS_REGISTRY_SERVICE, registry);
  const driver = new StreamDriver();
  const base = await httpFor(t, host.router);

  /** A stream with one rist input; waits until it runs unless `running` is false. */
  async function stream(
    t: Test,
    name: string,
    input: Record<string, unknown>,
    running = true,
  ): Promise<StreamInstance> {
    const inst = (await driver.create(
      streamResource({ 'stream-name': name, input: [{ type: 'rist', ...input }] }),
      host,
    )) as StreamInstance;
    t.teardown(() => inst.close());
    if (running) await waitFor(() => inst.state() === 'running', 15_000, `${name} running`);
    return inst;
  }

  /** ffmpeg playing the fixture in real time to a RIST URL (its librist protocol); `opts` are
   *  its protocol options (`-rist_profile simple`, `-secret …`): the URL's query is not read
   *  for them. */
  function ffmpegRist(t: Test, url: string, opts: string[] = []): void {
    peer(t, 'ffmpeg', [
      ...['-hide_banner', '-loglevel', 'error', '-re', '-stream_loop', '-1', '-i', fixture],
      ...['-map', '0', '-c', 'copy', '-f', 'mpegts', ...opts, url],
    ]);
  }

  /** ffmpeg to UDP, ristsender from there to RIST (rist-tools, the reference implementation). */
  async function ristsender(t: Test, args: string[]): Promise<void> {
    const udp = await freePort();
    peer(t, 'ristsender', ['-v', '3', '-i', `udp://@127.0.0.1:${udp}`, ...args]);
    ffmpegRist(t, `udp://127.0.0.1:${udp}?pkt_size=1316`);
  }

  return { fixture, host, registry, driver, base, stream, ffmpegRist, ristsender };
}
