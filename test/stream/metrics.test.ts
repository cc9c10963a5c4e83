// /metrics series of the streams: one series per stream for state, bytes out, input rate,
// active input, switches (a counter, as its _total name promises) and TR 101 290 indicators.
import { Registry } from 'prom-client';
import t from 'tap';
import { StreamDriver } from '../../src/drivers/stream/driver.ts';
import { METRICS_REGISTRY_SERVICE } from '../../src/drivers/stream/metrics.ts';
import { freePort, makeHost, streamResource, tempDir } from '../helpers/stream-host.ts';

t.test('per-stream series', async (t) => {
  const host = makeHost(tempDir(t));
  const reg = new Registry();
  host.services.set(METRICS_REGISTRY_SERVICE, reg);
  const driver = new StreamDriver();
  for (const name of ['one', 'two']) {
    const s = await driver.create(
      streamResource({ 'stream-name': name, input: [{ type: 'udp', port: await freePort() }] }),
      host,
    );
    t.teardown(() => s.close());
  }
  const text = await reg.metrics();
  for (const name of ['one', 'two']) {
    t.match(text, `sluice_stream_state{stream="${name}",state="starting"} 1`);
    t.match(text, `sluice_stream_switches_total{stream="${name}"} 0`);
    t.match(text, `sluice_stream_input_rate_bytes_per_second{stream="${name}"} 0`);
    t.match(text, `sluice_stream_output_bytes_total{stream="${name}"} 0`);
    t.match(text, `sluice_stream_tr101290_errors{stream="${name}",indicator="patError"`);
  }
  t.match(text, '# TYPE sluice_stream_switches_total counter');
  t.match(text, '# TYPE sluice_stream_output_bytes_total counter');
  t.notMatch(text, /_bits\b/, 'no metric in bits (Prometheus names are in bytes)');
});
