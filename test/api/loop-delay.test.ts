// The loop-delay histogram (src/api/loop-delay.ts, src/util/loop-delay-sampler.ts) on real
// loops: a 300 ms block of this loop and of a worker's land in their buckets under their own
// label, two scrapers never reset each other, and the main loop is sampled with no JS timer.
import { createHistogram } from 'node:perf_hooks';
import { Worker } from 'node:worker_threads';
import { Registry } from 'prom-client';
import t from 'tap';
import {
  installMainLoopDelay,
  LOOP_DELAY,
  LOOP_DELAY_MAX,
  LOOP_STALLED,
  loopDelayExporter,
} from '../../src/api/loop-delay.ts';
import {
  bucketCounts,
  LOOP_DELAY_BUCKETS,
  type LoopDelayCounts,
} from '../../src/util/loop-delay-sampler.ts';

const BLOCK_MS = 300;

/** Hold this thread's loop for `ms`, then yield once the sampler's overdue timer has run (it
 *  was due before the 1 ms timer set here). */
async function block(ms: number): Promise<void> {
  const until = performance.now() + ms;
  while (performance.now() < until) {}
  await new Promise((r) => setTimeout(r, 1));
}

/** `sample{labels} value` lines of one scrape, by series. */
async function series(reg: Registry): Promise<Map<string, number>> {
  const out = new Map<string, number>();
  for (const line of (await reg.metrics()).split('\n')) {
    const m = /^(sluice_eventloop_\w+(?:\{[^}]*\})?) (\S+)$/.exec(line);
    if (m) out.set(m[1]!, Number(m[2]));
  }
  return out;
}

/** Scrape until the main loop has samples: Node's timer records nothing at its first run
 *  (it has no previous run to measure from), so a block before that would go unseen. */
async function sampled(reg: Registry): Promise<Map<string, number>> {
  for (;;) {
    const s = await series(reg);
    if (s.get(`${LOOP_DELAY}_count{loop="main"}`)! > 0) return s;
    await new Promise((r) => setTimeout(r, 5));
  }
}

const over = (s: Map<string, number>, le: string, loop: string) =>
  s.get(`${LOOP_DELAY}_bucket{le="+Inf",loop="${loop}"}`)! -
  s.get(`${LOOP_DELAY}_bucket{le="${le}",loop="${loop}"}`)!;

t.test('bucket counts are the histogram’s own samples, a stall one sample', async (t) => {
  const h = createHistogram();
  const res = 10e6; // ns: what the native timer's interval adds to every sample
  for (let i = 0; i < 97; i++) h.record(res + 200_000); // 0.2 ms late
  h.record(res + 30e6); // 30 ms
  h.record(res + 300e6); // 300 ms
  h.record(res + 2_000e6); // a 2 s stall: one sample
  const counts = bucketCounts(h, res);
  t.equal(counts.length, LOOP_DELAY_BUCKETS.length + 1);
  const at = (le: number) => counts[LOOP_DELAY_BUCKETS.indexOf(le as never)];
  t.equal(at(0.001), 97, 'the on-time samples');
  t.equal(at(0.05), 1, '30 ms in (25, 50] ms');
  t.equal(at(0.5), 1, '300 ms in (250, 500] ms');
  t.equal(at(2.5), 1, '2 s in (1, 2.5] s');
  t.equal(
    counts.reduce((a, b) => a + b),
    100,
    'every sample once',
  );
});

t.test('the main loop: a 300 ms block above 0.25 s, two scrapers never reset it', async (t) => {
  const reg = new Registry();
  installMainLoopDelay(reg);
  const first = await sampled(reg);
  const second = await series(reg); // another scraper right after the first
  for (const [k, v] of first) t.ok(second.get(k)! >= v, `${k}: ${v} → ${second.get(k)}`);
  await block(BLOCK_MS);
  const after = await series(reg);
  const again = await series(reg);
  t.equal(over(after, '0.25', 'main') - over(first, '0.25', 'main'), 1, 'the block, once');
  t.equal(over(after, '0.5', 'main'), 0, 'and not over 0.5 s');
  t.equal(over(again, '0.25', 'main'), 1, 'still there for the next scraper');
  for (const [k, v] of after) t.ok(again.get(k)! >= v, `${k} grows only`);
  const sum = after.get(`${LOOP_DELAY}_sum{loop="main"}`)!;
  t.ok(sum >= 0.28, `_sum holds the block: ${sum}`);
  t.equal(after.get(`${LOOP_STALLED}{loop="main"}`), sum, 'the stalled counter is _sum');
  t.ok(after.get(`${LOOP_DELAY_MAX}{loop="main"}`)! >= 0.28, 'max since start');
});

t.test('the main loop is sampled by the native timer: no JavaScript timer added', async (t) => {
  const timers = () => process.getActiveResourcesInfo().filter((r) => r === 'Timeout').length;
  const before = timers();
  installMainLoopDelay(new Registry());
  t.equal(timers(), before);
});

t.test('a worker’s loop under its own label: its 300 ms block, not main’s', async (t) => {
  const reg = new Registry();
  installMainLoopDelay(reg);
  const exporter = loopDelayExporter(reg);
  const TSX = import.meta.resolve('tsx/esm/api');
  const entry = new URL('../helpers/loop-delay-worker.ts', import.meta.url).href;
  // As src/plane/pool.ts starts its workers: tsx registered in the worker, then the module.
  const boot = `const { workerData } = require('node:worker_threads');
import(workerData.tsx).then((m) => { m.register(); return import(workerData.entry); });`;
  const worker = new Worker(boot, {
    eval: true,
    workerData: { tsx: TSX, entry, loop: 'worker-1' },
  });
  t.teardown(() => worker.terminate());
  const takes = await new Promise<LoopDelayCounts[]>((resolve, reject) => {
    worker.on('error', reject);
    worker.on('message', (m) => {
      if (m === 'ready') worker.postMessage({ blockMs: BLOCK_MS });
      else resolve(m as LoopDelayCounts[]);
    });
  });
  for (const c of takes) exporter.add(c); // what the main thread does with each posted take
  const s = await series(reg);
  t.equal(over(s, '0.25', 'worker-1'), 1, 'the worker’s block');
  t.equal(over(s, '0.25', 'main'), 0, 'main was free meanwhile');
  t.ok(s.get(`${LOOP_DELAY_MAX}{loop="worker-1"}`)! >= 0.28);
  t.match(await reg.metrics(), new RegExp(`^# TYPE ${LOOP_DELAY} histogram$`, 'm'));
});
