// The loop-delay histogram of the real server: a 300 ms stall of its main loop (SIGUSR2 to a
// preloaded hook, test/helpers/stall-preload.mjs) lands above the 0.25 s bucket and in `_sum`,
// and two scrapers taking turns only ever see every series grow.
import t from 'tap';
import { startServer, waitFor } from '../helpers/server.ts';
import { STALL_MS, stallNodeOptions } from '../helpers/stall.ts';

const STALL_S = STALL_MS / 1000;
/** The sampling timer may be due up to 10 ms into the stall. */
const SAMPLE_S = 0.01;

/** The `sluice_eventloop_delay_*{loop="main"}` series of one scrape. */
async function loopSeries(url: string): Promise<Map<string, number>> {
  const body = await (await fetch(`${url}/metrics`)).text();
  const out = new Map<string, number>();
  for (const m of body.matchAll(/^(sluice_eventloop_delay_\w+\{[^}]*loop="main"[^}]*\}) (\S+)$/gm))
    out.set(m[1]!, Number(m[2]));
  return out;
}

const above = (s: Map<string, number>, le: string) =>
  s.get('sluice_eventloop_delay_seconds_bucket{le="+Inf",loop="main"}')! -
  s.get(`sluice_eventloop_delay_seconds_bucket{le="${le}",loop="main"}`)!;

t.test('a 300 ms stall of the main loop shows in the buckets, _sum and max', async (t) => {
  const srv = await startServer(t, { config: {}, env: { NODE_OPTIONS: stallNodeOptions() } });
  const before = await loopSeries(srv.url);
  t.ok(before.has('sluice_eventloop_delay_seconds_count{loop="main"}'), 'the histogram is there');
  srv.proc.kill('SIGUSR2');
  // The scrape after the signal is answered once the stall is over; wait until it is counted.
  const after = await waitFor('the stall to be counted', async () => {
    const s = await loopSeries(srv.url);
    return above(s, '0.25') > above(before, '0.25') ? s : undefined;
  });
  const sum = 'sluice_eventloop_delay_seconds_sum{loop="main"}';
  t.ok(
    after.get(sum)! - before.get(sum)! >= STALL_S - SAMPLE_S,
    `_sum grew by the stall: ${before.get(sum)} → ${after.get(sum)}`,
  );
  t.ok(
    after.get('sluice_eventloop_delay_max_seconds{loop="main"}')! >= STALL_S - SAMPLE_S,
    'the max is at least the stall',
  );
});

t.test('two scrapers taking turns: every series only grows', async (t) => {
  const srv = await startServer(t, { config: {} });
  let last = await loopSeries(srv.url);
  for (let i = 0; i < 6; i++) {
    const next = await loopSeries(srv.url);
    for (const [k, v] of last) {
      if (!k.includes('_max_') && next.get(k)! < v) t.fail(`${k} fell from ${v} to ${next.get(k)}`);
    }
    last = next;
  }
  const count = last.get('sluice_eventloop_delay_seconds_count{loop="main"}')!;
  t.ok(count > 0, `samples are counted (${count})`);
});
