// /metrics of the real server (`sluice serve`) with a running stream passes Prometheus' own
// linter, `promtool check metrics` (Debian package `prometheus`, installed by scripts/setup):
// types match names (`_total` only on counters, no gauge with a `quantile` label), base units
// (bytes, not bits), help on every metric — prom-client's process metrics included.
import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import t from 'tap';
import { promtoolCheck } from '../helpers/promtool.ts';
import { startServer, tempDir, waitFor } from '../helpers/server.ts';
import { cleanStream } from '../helpers/ts-craft.ts';

/** The file input plays 2 s of a 3 Mbit/s TS in real time, looping. */
const TS_MS = 2000;
const TS_BYTES_PER_SEC = 376_000;
const FLOW_TIMEOUT_MS = 20_000;

t.test('promtool check metrics passes on a live /metrics with a running stream', async (t) => {
  const dir = await tempDir(t, 'sluice-promtool-');
  const file = join(dir, 'clean.ts');
  await writeFile(file, Buffer.concat(cleanStream({ ms: TS_MS }).flatMap((tick) => tick.packets)));
  const srv = await startServer(t, {
    config: {
      stream: [
        {
          id: 1,
          'stream-name': 'live',
          pause: false,
          input: [{ type: 'file', 'file-path': file }],
        },
      ],
    },
  });
  // Bytes have left the stream and its input rate is measured.
  const text = await waitFor(
    'the stream to deliver bytes',
    async () => {
      const body = await (await fetch(`${srv.url}/metrics`)).text();
      const out = /^sluice_stream_output_bytes_total\{stream="live"\} (\d+)/m.exec(body);
      const rate = /^sluice_stream_input_rate_bytes_per_second\{stream="live"\} (\S+)/m.exec(body);
      return Number(out?.[1]) > 0 && Number(rate?.[1]) > 0 ? body : undefined;
    },
    FLOW_TIMEOUT_MS,
  ).catch((err: Error) => {
    throw new Error(`${err.message}\n${srv.output()}`);
  });

  const lint = await promtoolCheck(text);
  t.equal(lint.code, 0, `promtool check metrics exits 0:\n${lint.out}`);
  t.equal(lint.out.trim(), '', 'and reports nothing');

  t.match(text, /^# TYPE sluice_eventloop_delay_seconds histogram$/m, 'loop delay: a histogram');
  t.match(text, /^sluice_eventloop_delay_seconds_count\{loop="main"\} \d+/m);
  const rate = Number(
    /^sluice_stream_input_rate_bytes_per_second\{stream="live"\} (\S+)/m.exec(text)?.[1],
  );
  // The file is a constant 3.008 Mbit/s: 376,000 bytes per second by its PCR.
  t.ok(Math.abs(rate - TS_BYTES_PER_SEC) < TS_BYTES_PER_SEC * 0.05, `input rate ${rate} B/s`);
  t.match(text, /^sluice_stream_state\{stream="live",state="running"\} 1$/m);
  t.notMatch(text, /^sluice_\w*_bits\b/m, 'no metric in bits');
  // The HLS segment block pool (src/ott/pool.ts): what a memory investigation reads first.
  t.match(text, /^# TYPE sluice_ott_segment_pool_allocated_total counter$/m);
  t.match(text, /^# TYPE sluice_ott_segment_pool_reused_total counter$/m);
  t.match(text, /^sluice_ott_segment_pool_free_bytes \d+$/m);
  t.notMatch(text, /^nodejs_active_handles_total /m, 'no gauge named like a counter');
});
