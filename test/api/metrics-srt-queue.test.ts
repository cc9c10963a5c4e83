// /metrics of an SRT input's receive queue with a real peer: srt-live-transmit relays a 40 Mbit/s
// UDP load to a sluice caller while the loop that runs the input is held, so the native queue
// fills and sheds; the shed counter equals the input's status and counts on after the peer is
// restarted (the caller's new receiver starts from 0).
import { execFileSync } from 'node:child_process';
import path from 'node:path';
import { Registry } from 'prom-client';
import t from 'tap';
import { StreamDriver } from '../../src/drivers/stream/driver.ts';
import type { StreamInstance } from '../../src/drivers/stream/instance.ts';
import { METRICS_REGISTRY_SERVICE } from '../../src/drivers/stream/metrics.ts';
import { REPO_ROOT } from '../helpers/server.ts';
import {
  freePort,
  makeFixture,
  makeHost,
  peer,
  streamResource,
  tempDir,
  waitFor,
} from '../helpers/stream-host.ts';

/** The load: paced, at most 40 s and 2,000,000 datagrams of 1316 bytes. */
const LOAD_MBPS = 40;
const LOAD_SECONDS = 40;
const LOAD_MAX = 2_000_000;
/** Longer than the 256-batch queue lasts at this rate (a batch per 20 ms or 64 messages). */
const HOLD_MS = 6000;

const DROPS = 'sluice_stream_input_srt_queue_drops_total{stream="q",input="0"}';
const QUEUED = 'sluice_stream_input_srt_queued_batches{stream="q",input="0"}';

function value(text: string, series: string): number | undefined {
  const line = text.split('\n').find((l) => l.startsWith(`${series} `));
  return line === undefined ? undefined : Number(line.slice(series.length + 1));
}

type Srt = { queueDrops: number; queued: number };
function srtOf(s: StreamInstance): { connects: number; srt?: Srt } {
  const inp = (s.status()['inputs'] as Record<string, unknown>[])[0]!;
  return (inp['transport'] ?? { connects: 0 }) as { connects: number; srt?: Srt };
}

t.test('SRT receive-queue sheds on /metrics, kept across a reconnection', async (t) => {
  const dir = tempDir(t);
  const fixture = makeFixture(dir, 4);
  const host = makeHost(dir);
  const metrics = new Registry();
  host.services.set(METRICS_REGISTRY_SERVICE, metrics);
  const flood = path.join(dir, 'udp-flood');
  execFileSync('cc', ['-O2', '-o', flood, path.join(REPO_ROOT, 'test/helpers/udp-flood.c')]);
  const [udp, port] = [await freePort(), await freePort()];
  const relay = () =>
    peer(t, 'srt-live-transmit', ['-q', `udp://127.0.0.1:${udp}`, `srt://:${port}?mode=listener`]);
  let slt = relay();
  peer(t, flood, [
    fixture,
    '127.0.0.1',
    String(udp),
    String(LOAD_MBPS),
    String(LOAD_SECONDS),
    String(LOAD_MAX),
  ]);
  const s = (await new StreamDriver().create(
    streamResource({
      'stream-name': 'q',
      input: [{ type: 'srt', address: '127.0.0.1', port, 'srt-client-timeout-ms': 1000 }],
    }),
    host,
  )) as StreamInstance;
  t.teardown(() => s.close());
  await waitFor(() => s.state() === 'running', 20_000, 'the stream running on the load');
  t.equal(value(await metrics.metrics(), DROPS), 0, 'no sheds while the loop keeps up');

  // The held loop: the native receive thread goes on queueing for it, then sheds.
  const until = performance.now() + HOLD_MS;
  while (performance.now() < until) {}
  const held = srtOf(s).srt!;
  t.ok(held.queueDrops > 0, `the queue shed (${held.queueDrops} batches)`);
  // The queue still drains (and may shed) while the scrape runs: its figure is between two
  // readings of the status around it.
  let text = await metrics.metrics();
  const later = srtOf(s).srt!.queueDrops;
  const scraped = value(text, DROPS)!;
  t.ok(
    scraped >= held.queueDrops && scraped <= later,
    `the counter is the status figure: ${held.queueDrops} ≤ ${scraped} ≤ ${later}`,
  );
  t.ok(value(text, QUEUED)! >= 0, 'queued batches are a gauge');
  const before = scraped;

  // The peer restarts: the caller dials again with a new receiver, whose count starts at 0.
  slt.kill('SIGKILL');
  await new Promise((r) => slt.once('exit', r));
  slt = relay();
  await waitFor(
    () => srtOf(s).connects >= 2 && srtOf(s).srt!.queueDrops < before,
    30_000,
    'the caller connected again with a new receiver',
  );
  text = await metrics.metrics();
  const after = value(text, DROPS)!;
  t.ok(after >= before, `the counter counts on: ${before} → ${after}`);
  t.equal(after, before + srtOf(s).srt!.queueDrops, 'the old receiver’s sheds plus the new one’s');
});
