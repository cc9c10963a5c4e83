// Per-thread CPU (sluice_thread_cpu_seconds_total) and per-stream segment memory
// (sluice_stream_memory_bytes, memoryBytes in /data/stream/{id}) on a real server, and the
// thread reader's sums on made-up /proc readings (a thread that ends keeps its seconds).
import { readFileSync } from 'node:fs';
import t from 'tap';
import { ThreadCpu } from '../../src/api/metrics-process.ts';
import { freePort, startServer, waitFor } from '../helpers/server.ts';

function value(text: string, series: string): number | undefined {
  const line = text.split('\n').find((l) => l.startsWith(`${series} `));
  return line === undefined ? undefined : Number(line.slice(series.length + 1));
}

t.test('thread CPU by name: main, grouped names, ended threads kept, names bounded', async (t) => {
  let tasks: Record<string, { name: string; ticks: number }> = {
    '100': { name: 'node', ticks: 250 },
    '101': { name: 'sluice-udp', ticks: 40 },
    '102': { name: 'node', ticks: 10 },
    '103': { name: 'node', ticks: 5 },
  };
  const cpu = new ThreadCpu(
    100,
    () => Object.keys(tasks),
    (tid) => tasks[tid],
  );
  t.same(
    Object.fromEntries(cpu.sample()),
    { main: 2.5, 'sluice-udp': 0.4, node: 0.15 },
    'the process id is main, same names summed',
  );
  delete tasks['103'];
  tasks['102']!.ticks = 20;
  t.equal(cpu.sample().get('node'), 0.25, 'a thread that ended keeps what it used');
  tasks = { ...tasks };
  for (let i = 0; i < 60; i++) tasks[String(200 + i)] = { name: `w${i}`, ticks: 1 };
  const names = cpu.sample();
  // main, 48 names (node, sluice-udp and the first 46 new ones), other.
  t.equal(names.size, 50, 'names stay few');
  t.equal(names.get('other'), 0.14, 'the rest summed as other');
});

t.test('the real server: CPU per thread and segment bytes per stream', async (t) => {
  const port = await freePort();
  const srv = await startServer(t, {
    config: {
      stream: [
        {
          id: 1,
          'stream-name': 'hls',
          pause: false,
          'ott-hls': 1,
          'ott-segment-duration': 1,
          input: [
            { type: 'test', width: 160, height: 90, 'video-bitrate': 100, 'enable-overlay': false },
          ],
        },
        {
          id: 2,
          'stream-name': 'u',
          pause: false,
          input: [{ type: 'udp', address: '127.0.0.1', port }],
        },
      ],
    },
  });
  const scrape = async () => (await fetch(`${srv.url}/metrics`)).text();
  const memory = async () =>
    ((await (await fetch(`${srv.url}/data/stream/hls`)).json()) as { memoryBytes: number })
      .memoryBytes;
  // Segments made: the stores hold bytes; read status, metrics, status until both statuses agree.
  const { text, bytes } = await waitFor(
    'segments in the store',
    async () => {
      const a = await memory();
      const text = await scrape();
      const b = await memory();
      return a > 0 && a === b ? { text, bytes: a } : undefined;
    },
    30_000,
  );
  t.equal(
    value(text, 'sluice_stream_memory_bytes{stream="hls"}'),
    bytes,
    `the metric is memoryBytes (${bytes})`,
  );
  t.equal(
    value(text, 'sluice_stream_memory_bytes{stream="u"}'),
    0,
    'a stream without OTT holds none',
  );
  t.match(text, /^# TYPE sluice_thread_cpu_seconds_total counter$/m);
  const main = value(text, 'sluice_thread_cpu_seconds_total{thread="main"}')!;
  t.ok(main > 0, `the JS thread used CPU (${main} s)`);
  t.type(
    value(text, 'sluice_thread_cpu_seconds_total{thread="sluice-udp"}'),
    'number',
    'the UDP receive thread',
  );
  let sum = 0;
  for (const m of text.matchAll(/^sluice_thread_cpu_seconds_total\{thread="[^"]*"\} (\S+)$/gm))
    sum += Number(m[1]);
  // The process's own figure, read after the scrape: every thread's, ended ones too.
  const fields = readFileSync(`/proc/${srv.proc.pid}/stat`, 'latin1').split(') ')[1]!.split(' ');
  const proc = (Number(fields[11]) + Number(fields[12])) / 100;
  t.ok(sum <= proc + 0.02 && sum >= proc * 0.8, `threads sum ${sum} s, the process ${proc} s`);
  const later = await waitFor('more CPU on the JS thread', async () => {
    const s = await scrape();
    return value(s, 'sluice_thread_cpu_seconds_total{thread="main"}')! > main ? s : undefined;
  });
  t.ok(value(later, 'sluice_thread_cpu_seconds_total{thread="main"}')! > main, 'it grows');
});
