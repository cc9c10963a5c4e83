// Failover with real peers: the primary's ffmpeg stops → the backup is active within
// stream-timeout + 1 s; it returns → back within check-interval + 1 s; an ffmpeg client reading
// /mpegts keeps decoding across both switches and the output has no CC error. A primary with a
// high CC-error rate (a relay dropping datagrams) is left for the backup.
import dgram from 'node:dgram';
import http from 'node:http';
import t from 'tap';
import { StreamDriver } from '../../src/drivers/stream/driver.ts';
import type { StreamInstance } from '../../src/drivers/stream/instance.ts';
import { TsAnalyzer } from '../../src/native/ts.ts';
import {
  freePort,
  httpFor,
  makeFixture,
  makeHost,
  peer,
  playFixture,
  streamResource,
  tempDir,
  waitFor,
} from '../helpers/stream-host.ts';

const dir = tempDir(t);
const fixture = makeFixture(dir);
const host = makeHost(dir);
const driver = new StreamDriver();
const base = await httpFor(t, host.router);
const udp = (port: number) => `udp://127.0.0.1:${port}?pkt_size=1316`;
/** One second of the fixture in TS packets (500 kbit/s video, 64 kbit/s audio: ~444/s). */
const STREAM_SECOND_PACKETS = 440;

async function create(name: string, spec: Record<string, unknown>): Promise<StreamInstance> {
  const inst = (await driver.create(
    streamResource({ 'stream-name': name, ...spec }),
    host,
  )) as StreamInstance;
  t.teardown(() => inst.close());
  return inst;
}

t.test('silence failover and return to the primary, output stays continuous', async (t) => {
  const [p1, p2] = [await freePort(), await freePort()];
  let primary = playFixture(t, fixture, 'mpegts', udp(p1));
  playFixture(t, fixture, 'mpegts', udp(p2));
  const s = await create('fo', {
    input: [
      { type: 'udp', port: p1 },
      { type: 'udp', port: p2 },
    ],
  });
  await waitFor(() => s.state() === 'running', 5000, 'running');
  // A raw reader for the CC check and an ffmpeg decoder that must survive the switches.
  const raw: Buffer[] = [];
  let received = 0;
  const req = http.get(`${base}/fo/mpegts`, (res) =>
    res.on('data', (d: Buffer) => {
      raw.push(d);
      received += d.length;
    }),
  );
  /** Wait until the raw reader has `packets` more packets than now: the output goes on. */
  const flowing = async (packets: number, what: string) => {
    const from = received;
    await waitFor(() => received >= from + packets * 188, 5000, what);
  };
  req.on('error', () => undefined);
  t.teardown(() => req.destroy());
  const decoder = peer(t, 'ffmpeg', [
    '-hide_banner',
    '-loglevel',
    'error',
    '-i',
    `${base}/fo/mpegts`,
    '-f',
    'null',
    '-',
  ]);
  // Both clients connected and reading before the switch (~1 s of the stream).
  await waitFor(
    () => (s.status()['httpTs'] as { clients: number }).clients === 2,
    5000,
    'both clients connected',
  );
  await flowing(STREAM_SECOND_PACKETS, 'the reader getting the primary');

  const killed = Date.now();
  primary.kill('SIGKILL');
  await waitFor(() => s.status()['activeInput'] === 1, 2000 + 500, 'backup active');
  const toBackup = Date.now() - killed;
  const onBackup = await waitFor(
    () =>
      (s.status()['alerts'] as { key: string; message: string }[]).find(
        (a) => a.key === 'backup-active',
      ),
    1000,
    'backup-active alert',
  );
  t.match(onBackup?.message, /on backup input 1 \(primary: /, 'backup-active alert');
  t.ok(
    toBackup <= 2000,
    `backup active ${toBackup} ms after the primary stopped (timeout 1 s + 1 s)`,
  );

  await flowing(STREAM_SECOND_PACKETS, 'the reader getting the backup');
  const back = Date.now();
  primary = playFixture(t, fixture, 'mpegts', udp(p1));
  await waitFor(() => s.status()['activeInput'] === 0, 11_500, 'primary active again');
  const toPrimary = Date.now() - back;
  t.ok(
    toPrimary <= 11_000,
    `back on the primary after ${toPrimary} ms (check-interval 10 s + 1 s)`,
  );
  // The decoder must survive the switch back: ~1.5 s of the stream after it.
  await flowing(1.5 * STREAM_SECOND_PACKETS, 'the reader getting the primary again');

  t.equal(decoder.exitCode, null, 'the ffmpeg client is still decoding');
  req.destroy();
  const a = new TsAnalyzer({ tr101290: true });
  a.push(Buffer.concat(raw));
  const st = a.stats();
  t.ok(st.packets > 1000, `client read ${st.packets} packets`);
  t.equal(st.tr101290.continuityCountError, 0, 'no CC error in the output across two switches');
  const log = s.status()['switches'] as { from: number; to: number; reason: string }[];
  t.same(
    log.map((e) => [e.from, e.to]),
    [
      [0, 1],
      [1, 0],
    ],
    'switch log',
  );
  t.match(log[0]!.reason, /no valid TS/);
  t.match(log[1]!.reason, /primary/);
});

t.test('a primary with a high CC-error rate is left for the backup', async (t) => {
  const [src, p1, p2] = [await freePort(), await freePort(), await freePort()];
  // Relay: forwards the primary's datagrams but drops every third one.
  const relay = dgram.createSocket('udp4');
  const out = dgram.createSocket('udp4');
  let n = 0;
  relay.on('message', (m) => {
    if (++n % 3 !== 0) out.send(m, p1, '127.0.0.1');
  });
  await new Promise<void>((r) => relay.bind(src, '127.0.0.1', () => r()));
  t.teardown(() => {
    relay.close();
    out.close();
  });
  playFixture(t, fixture, 'mpegts', udp(src));
  playFixture(t, fixture, 'mpegts', udp(p2));
  await waitFor(() => n > 50, 5000, 'the relay forwarding');
  const s = await create('cc', {
    'failover-error-rate': 2,
    'failover-error-window': 2,
    input: [
      { type: 'udp', port: p1 },
      { type: 'udp', port: p2 },
    ],
  });
  await waitFor(() => s.status()['activeInput'] === 1, 6000, 'backup chosen for quality');
  const log = s.status()['switches'] as { reason: string }[];
  t.match(
    log[0]!.reason,
    /priority-1 errors/,
    `switch reason names the error rate: ${log[0]!.reason}`,
  );
  const alerts = s.status()['alerts'] as { key: string }[];
  t.ok(
    alerts.some((a) => a.key === 'input-0-errors'),
    'alert raised for the primary',
  );
});
