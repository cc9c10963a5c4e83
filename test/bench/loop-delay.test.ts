// The dvr-box bench's loop-delay reader (bench/lib/loop-delay.ts): the window's p99 from two
// scrapes, whether /metrics gives quantiles (reset per scrape) or a histogram that only grows.
import t from 'tap';
import { loopDelayOver } from '../../bench/lib/loop-delay.ts';

const histogram = (counts: [string, number][], max: number) =>
  [
    ...counts.map(
      ([le, n]) => `sluice_eventloop_delay_seconds_bucket{le="${le}",loop="main"} ${n}`,
    ),
    `sluice_eventloop_delay_seconds_bucket{le="+Inf",loop="worker-1"} 5000`,
    `sluice_eventloop_delay_max_seconds{loop="main"} ${max}`,
  ].join('\n');

t.test('summary form: its own quantiles', async (t) => {
  const after = [
    'sluice_eventloop_delay_seconds{quantile="0.5"} 0.001',
    'sluice_eventloop_delay_seconds{quantile="0.99"} 0.007',
    'sluice_eventloop_delay_seconds{quantile="1"} 0.034',
  ].join('\n');
  t.same(loopDelayOver('', after), { p99: 0.007, max: 0.034 });
});

t.test('histogram form: the window is the difference of the two scrapes', async (t) => {
  // Before the window: 1,000 samples, 100 of them 0.1–0.25 s (a stall before the step).
  const before = histogram(
    [
      ['0.005', 800],
      ['0.01', 900],
      ['0.25', 1000],
      ['+Inf', 1000],
    ],
    0.2,
  );
  // In the window: 1,000 more, 995 under 5 ms, 5 in 5–10 ms: p99 within the 5 ms bucket.
  const after = histogram(
    [
      ['0.005', 1795],
      ['0.01', 1900],
      ['0.25', 2000],
      ['+Inf', 2000],
    ],
    0.2,
  );
  t.same(loopDelayOver(before, after), { p99: 0.005, max: 0.2 });
  // Read whole-run (the old way) the stall before the window would have put p99 at 0.25 s.
  t.equal(loopDelayOver('', after).p99, 0.25);
});

t.test('no loop delay in /metrics: NaN, never a passing figure', async (t) => {
  t.ok(Number.isNaN(loopDelayOver('', 'process_cpu_seconds_total 1').p99));
});
