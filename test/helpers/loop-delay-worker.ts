// A worker thread for test/api/loop-delay.test.ts: samples its own loop with loopDelaySampler,
// holds that loop for the asked time, and posts its takes (before the block, and after).
import { parentPort, workerData } from 'node:worker_threads';
import { type LoopDelayCounts, loopDelaySampler } from '../../src/util/loop-delay-sampler.ts';

const port = parentPort!;
const sampler = loopDelaySampler(workerData.loop as string);
port.on('message', (m: { blockMs: number }) => {
  const until = performance.now() + m.blockMs;
  while (performance.now() < until) {} // the stall: this loop runs nothing else meanwhile
  // The sampler's native timer is overdue now, so it runs before any new timer: the take
  // below sees the stall.
  setTimeout(() => port.postMessage([before, sampler.take()]), 1);
});
// Ready once the sampler has measured a run (Node's timer records nothing at its first run, so a
// block before that would go unseen); the samples before the block are posted with it.
let before: LoopDelayCounts | undefined;
const wait = () => {
  before = sampler.take();
  if (before.count > 0) port.postMessage('ready');
  else setTimeout(wait, 5);
};
wait();
