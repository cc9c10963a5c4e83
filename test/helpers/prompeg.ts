// Shared set-up of the prompeg stream tests: port triples (media, +2 column, +4 row), one lossy
// relay per port that drops media only, a ~2 Mbit/s fixture (enough packets per second for a few
// dozen losses in a short run), senders (ffmpeg's prompeg, GStreamer's rtpst2022-1-fecenc), and
// a stream driver with its metrics registry.
import { spawnSync } from 'node:child_process';
import { createSocket } from 'node:dgram';
import { join } from 'node:path';
import { Registry } from 'prom-client';
import type { Test } from 'tap';
import { StreamDriver } from '../../src/drivers/stream/driver.ts';
import type { StreamInstance } from '../../src/drivers/stream/instance.ts';
import { METRICS_REGISTRY_SERVICE } from '../../src/drivers/stream/metrics.ts';
import { type LossyRelay, lossyRelay } from './lossy-relay.ts';
import {
  freePort,
  httpFor,
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

/** A free UDP port (freePort checks TCP only: a UDP socket of a relay may hold it). */
export async function udpPort(): Promise<number> {
  const s = createSocket('udp4');
  return new Promise((resolve) => {
    s.bind(0, '127.0.0.1', () => {
      const p = s.address().port;
      s.close(() => resolve(p));
    });
  });
}

/** A port p with p, p + 2 and p + 4 free (media, column FEC, row FEC). */
export async function portTriple(): Promise<number> {
  for (let i = 0; i < 50; i++) {
    const p = await freePort();
    if (p + 4 > 65535) continue;
    if ((await udpFree(p)) && (await udpFree(p + 2)) && (await udpFree(p + 4))) return p;
  }
  throw new Error('no free port triple');
}

/** Three relays at base, base + 2, base + 4 towards target's three ports; only the media one
 *  drops (`loss`, seeded). */
export async function fecRelays(
  t: Test,
  target: number,
  loss: number,
  seed: number,
): Promise<{ base: number; media: LossyRelay; column: LossyRelay; row: LossyRelay }> {
  const base = await portTriple();
  const media = await lossyRelay(t, { targetPort: target, listenPort: base, loss, seed });
  const column = await lossyRelay(t, { targetPort: target + 2, listenPort: base + 2 });
  const row = await lossyRelay(t, { targetPort: target + 4, listenPort: base + 4 });
  return { base, media, column, row };
}

export type Status = Record<string, unknown>;
export const input0 = (s: StreamInstance): Status => (s.status()['inputs'] as Status[])[0]!;
export const transport = (s: StreamInstance): Status => input0(s)['transport'] as Status;
export const ccErrors = (s: StreamInstance): number =>
  Number((input0(s)['tr101290'] as Status | undefined)?.['continuityCountError'] ?? 0);

/** A ~2 Mbit/s H.264 + AAC TS (video PID 256, audio 257). */
export function makeFecFixture(dir: string, seconds: number): string {
  const out = join(dir, 'fec-fixture.ts');
  const r = spawnSync('ffmpeg', [
    ...['-hide_banner', '-loglevel', 'error', '-y'],
    ...['-f', 'lavfi', '-i', `testsrc2=size=640x360:rate=25:duration=${seconds}`],
    ...['-f', 'lavfi', '-i', `sine=frequency=440:sample_rate=48000:duration=${seconds}`],
    ...['-c:v', 'libx264', '-preset', 'ultrafast', '-g', '25'],
    ...['-b:v', '2M', '-minrate', '2M', '-maxrate', '2M', '-bufsize', '500k'],
    ...['-x264-params', 'nal-hrd=cbr', '-c:a', 'aac', '-b:a', '64k'],
    ...['-streamid', '0:256', '-streamid', '1:257', '-f', 'mpegts', out],
  ]);
  if (r.status !== 0) throw new Error(`fixture: ${r.stderr}`);
  return out;
}

export async function prompegHarness(t: Test) {
  const dir = tempDir(t);
  const fixture = makeFecFixture(dir, 10);
  const host = makeHost(dir);
  const registry = new Registry();
  host.services.set(METRICS_REGISTRY_SERVICE, registry);
  const driver = new StreamDriver();
  const base = await httpFor(t, host.router);

  /** A stream with the given inputs and outputs; waits until it runs unless `running` is false. */
  async function stream(
    t: Test,
    name: string,
    spec: { input: Record<string, unknown>[]; output?: Record<string, unknown>[] },
    running = true,
  ): Promise<StreamInstance> {
    const inst = (await driver.create(
      streamResource({ 'stream-name': name, ...spec }),
      host,
    )) as StreamInstance;
    t.teardown(() => inst.close());
    if (running) await waitFor(() => inst.state() === 'running', 15_000, `${name} running`);
    return inst;
  }

  /** ffmpeg playing the fixture in real time as RTP with Pro-MPEG FEC (L × D) to base. */
  function ffmpegPrompeg(t: Test, port: number, l = 5, d = 5): void {
    peer(t, 'ffmpeg', [
      ...['-hide_banner', '-loglevel', 'error', '-re', '-stream_loop', '-1', '-i', fixture],
      ...['-map', '0', '-c', 'copy', '-f', 'rtp_mpegts', '-fec', `prompeg=l=${l}:d=${d}`],
      `rtp://127.0.0.1:${port}`,
    ]);
  }

  /** GStreamer's rtpst2022-1-fecenc (media SSRC 0, as it requires) playing the fixture once in
   *  real time (tsparse timestamps from the PCR, udpsink syncs on them). */
  function gstPrompeg(t: Test, port: number, l = 5, d = 5): void {
    peer(t, 'gst-launch-1.0', [
      '-q',
      ...['filesrc', `location=${fixture}`, '!', 'tsparse', 'set-timestamps=true', '!'],
      ...['rtpmp2tpay', 'ssrc=0', '!', 'rtpst2022-1-fecenc', `columns=${l}`, `rows=${d}`],
      'name=fec',
      ...['fec.src', '!', 'udpsink', 'host=127.0.0.1', `port=${port}`],
      ...['fec.fec_0', '!', 'udpsink', 'host=127.0.0.1', `port=${port + 2}`, 'async=false'],
      ...['fec.fec_1', '!', 'udpsink', 'host=127.0.0.1', `port=${port + 4}`, 'async=false'],
    ]);
  }

  return { dir, fixture, host, registry, driver, base, stream, ffmpegPrompeg, gstPrompeg };
}
