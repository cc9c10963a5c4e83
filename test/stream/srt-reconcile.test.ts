// Reconcile granularity for srt inputs (issue 16): a change to one srt input's fields restarts
// that input only — the other keeps its connection — and the port it held is free at once (a
// new listener binds it straight away).
import t from 'tap';
import type { StreamInstance } from '../../src/drivers/stream/instance.ts';
import { SrtReceiver } from '../../src/native/srt.ts';
import {
  freePort,
  makeFixture,
  makeHost,
  openStream,
  peer,
  playFixture,
  streamResource,
  tempDir,
  waitFor,
} from '../helpers/stream-host.ts';

const dir = tempDir(t);
const fixture = makeFixture(dir);
const host = makeHost(dir);

type Status = Record<string, unknown>;
const transportOf = (s: StreamInstance, i: number): Status | undefined =>
  (s.status()['inputs'] as Status[])[i]!['transport'] as Status | undefined;

t.test('a change to one srt input restarts that input only; its old port is free', async (t) => {
  const [p1, p2, p3, udp] = [
    await freePort(),
    await freePort(),
    await freePort(),
    await freePort(),
  ];
  const srt = (port: number) => ({ type: 'srt', 'listen-mode': true, port });
  // The primary never gets a caller: after stream-timeout (3 s) the backup opens and takes
  // over. srt-live-transmit dials it from the start and keeps dialling (auto-reconnect) until
  // it listens, so its data is there within the backup's own stream-timeout.
  const spec = {
    'stream-name': 'srt-rc',
    'stream-timeout': 3_000_000,
    input: [srt(p1), srt(p2)],
  };
  peer(t, 'srt-live-transmit', ['-q', '-a:yes', `udp://127.0.0.1:${udp}`, `srt://127.0.0.1:${p2}`]);
  playFixture(t, fixture, 'mpegts', `udp://127.0.0.1:${udp}?pkt_size=1316`);
  const s = await openStream(t, host, spec);
  await waitFor(
    () => s.status()['activeInput'] === 1 && s.state() === 'running',
    20_000,
    'on the backup',
  );
  t.equal(transportOf(s, 1)?.['connects'], 1);

  await s.update(streamResource({ ...spec, input: [srt(p3), srt(p2)] }), [
    { path: 'input[0].port', before: p1, after: p3, apply: 'restart', scope: 'input[0]' },
  ]);
  // The old port binds again at once.
  const probe = new SrtReceiver({ mode: 'listener', port: p1, onData: () => {} });
  t.equal(probe.port, p1, 'the old port is free at once');
  probe.close();
  t.equal(transportOf(s, 0)?.['port'], p3, 'the changed input listens on its new port');
  t.equal(transportOf(s, 1)?.['connected'], true, 'the other input kept its caller');
  t.equal(transportOf(s, 1)?.['connects'], 1, 'without reconnecting');
  t.equal(s.state(), 'running', 'still running');
});
