// /metrics of SRT and RIST inputs' receive queues with real peers: srt-live-transmit or
// ristsender relays a 40 Mbit/s UDP load to sluice while the loop that runs the input is held,
// so the native queue fills and sheds; the counter equals the input's status, and the SRT one
// counts on after the peer is restarted (the caller's new receiver starts from 0).
import { execFileSync } from 'node:child_process';
import path from 'node:path';
import { Registry } from 'prom-client';
import t, { type Test } from 'tap';
import { StreamDriver } from '../../src/drivers/stream/driver.ts';
import type { StreamInstance } from '../../src/drivers/stream/instance.ts';
import { METRICS_REGISTRY_SERVICE } from '../../src/drivers/stream/metrics.ts';
import { evenPortPair } from '../helpers/rist.ts';
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
const HOLD_MS = 8000;

function value(text: string, series: string): number | undefined {
  const line = text.split('\n').find((l) => l.startsWith(`${series} `));
  return line === undefined ? undefined : Number(line.slice(series.length + 1));
}

const series = (kind: string, name: string) =>
  `sluice_stream_input_${kind}_${name}{stream="q",input="0"}`;

/** Hold this loop (the one running the inputs): the native receive thread goes on queueing
 *  for it, then sheds. */
function hold(): void {
  const until = performance.now() + HOLD_MS;
  while (performance.now() < until) {}
}

/** No sheds while the loop keeps up; after the hold the queue has shed, and a scrape's counter
 *  is the status figure (between two readings around it: the queue drains, and may shed, while
 *  the scrape runs). Returns the scraped count. */
async function holdAndScrape(
  t: Test,
  metrics: Registry,
  kind: 'srt' | 'rist',
  drops: () => number,
): Promise<number> {
  const DROPS = series(kind, 'queue_drops_total');
  t.equal(value(await metrics.metrics(), DROPS), 0, 'no sheds while the loop keeps up');
  hold();
  const held = drops();
  t.ok(held > 0, `the queue shed (${held} batches)`);
  const text = await metrics.metrics();
  const scraped = value(text, DROPS)!;
  t.ok(scraped >= held && scraped <= drops(), `the counter is the status figure (${scraped})`);
  t.ok(value(text, series(kind, 'queued_batches'))! >= 0, 'queued batches are a gauge');
  return scraped;
}

/** A host with its own metrics registry, and the UDP load sent to `udp`. */
function setUp(t: Test, udp: number) {
  const dir = tempDir(t);
  const fixture = makeFixture(dir, 4);
  const host = makeHost(dir);
  const metrics = new Registry();
  host.services.set(METRICS_REGISTRY_SERVICE, metrics);
  const flood = path.join(dir, 'udp-flood');
  execFileSync('cc', ['-O2', '-o', flood, path.join(REPO_ROOT, 'test/helpers/udp-flood.c')]);
  const load = [fixture, '127.0.0.1', String(udp), String(LOAD_MBPS), String(LOAD_SECONDS)];
  peer(t, flood, [...load, String(LOAD_MAX)]);
  /** The stream `q` with this one input, once it runs. */
  const stream = async (input: Record<string, unknown>): Promise<StreamInstance> => {
    const s = (await new StreamDriver().create(
      streamResource({ 'stream-name': 'q', input: [input] }),
      host,
    )) as StreamInstance;
    t.teardown(() => s.close());
    await waitFor(() => s.state() === 'running', 20_000, 'the stream running on the load');
    return s;
  };
  return { metrics, stream };
}

/** Input 0's transport status. */
function transportOf(s: StreamInstance): Record<string, unknown> {
  const inp = (s.status()['inputs'] as Record<string, unknown>[])[0]!;
  return (inp['transport'] ?? {}) as Record<string, unknown>;
}

t.test('SRT receive-queue sheds on /metrics, kept across a reconnection', async (t) => {
  const [udp, port] = [await freePort(), await freePort()];
  const relay = () =>
    peer(t, 'srt-live-transmit', ['-q', `udp://127.0.0.1:${udp}`, `srt://:${port}?mode=listener`]);
  let slt = relay();
  const { metrics, stream } = setUp(t, udp);
  const s = await stream({
    type: 'srt',
    address: '127.0.0.1',
    port,
    'srt-client-timeout-ms': 1000,
  });
  const drops = () => (transportOf(s)['srt'] as { queueDrops: number }).queueDrops;
  const scraped = await holdAndScrape(t, metrics, 'srt', drops);

  // The peer restarts: the caller dials again with a new receiver, whose count starts at 0.
  slt.kill('SIGKILL');
  await new Promise((r) => slt.once('exit', r));
  slt = relay();
  await waitFor(
    () => Number(transportOf(s)['connects']) >= 2 && drops() < scraped,
    30_000,
    'the caller connected again with a new receiver',
  );
  const after = value(await metrics.metrics(), series('srt', 'queue_drops_total'))!;
  t.ok(after >= scraped, `the counter counts on: ${scraped} → ${after}`);
  t.equal(after, scraped + drops(), 'the old receiver’s sheds plus the new one’s');
});

t.test('RIST receive-queue sheds on /metrics', async (t) => {
  const [udp, port] = [await freePort(), await evenPortPair()];
  const rist = `rist://127.0.0.1:${port}`;
  peer(t, 'ristsender', ['-i', `udp://@127.0.0.1:${udp}`, '-p', '1', '-o', rist]);
  const { metrics, stream } = setUp(t, udp);
  const s = await stream({
    type: 'rist',
    'rist-addr-port': [port],
    'rist-addr-intf': ['127.0.0.1'],
  });
  const drops = () => Number(transportOf(s)['queueDrops']);
  await holdAndScrape(t, metrics, 'rist', drops);
});
