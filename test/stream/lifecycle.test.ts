// Reconcile granularity and robustness: changing one input's port restarts that input only (the
// other keeps its socket: same inode in /proc/net/udp), pause stops, close leaves no socket;
// junk on the input never crashes the stream, counters rise, and good input recovers it.

import { randomBytes } from 'node:crypto';
import dgram from 'node:dgram';
import { readFileSync } from 'node:fs';
import t from 'tap';
import { StreamDriver } from '../../src/drivers/stream/driver.ts';
import type { StreamInstance } from '../../src/drivers/stream/instance.ts';
import {
  freePort,
  makeFixture,
  makeHost,
  playFixture,
  streamResource,
  tempDir,
  waitFor,
} from '../helpers/stream-host.ts';

const dir = tempDir(t);
const fixture = makeFixture(dir, 4);
const host = makeHost(dir);
const driver = new StreamDriver();

/** Inode of the UDP socket bound to `port` (any address), or undefined. */
function udpInode(port: number): string | undefined {
  const hex = port.toString(16).toUpperCase().padStart(4, '0');
  for (const line of readFileSync('/proc/net/udp', 'utf8').split('\n').slice(1)) {
    const f = line.trim().split(/\s+/);
    if (f[1]?.endsWith(`:${hex}`)) return f[9];
  }
  return undefined;
}

t.test('port change restarts one input; pause and close release sockets', async (t) => {
  const [p1, p2, p3] = [await freePort(), await freePort(), await freePort()];
  playFixture(t, fixture, 'mpegts', `udp://127.0.0.1:${p2}?pkt_size=1316`);
  const spec = {
    'stream-name': 'rc',
    input: [
      { type: 'udp', port: p1 },
      { type: 'udp', port: p2 },
    ],
  };
  const s = (await driver.create(streamResource(spec), host)) as StreamInstance;
  t.teardown(() => s.close());
  // The silent primary makes the stream go to the backup; the primary stays open to be probed.
  await waitFor(
    () => s.status()['activeInput'] === 1 && s.state() === 'running',
    5000,
    'on the backup',
  );
  const backupInode = udpInode(p2);
  t.ok(udpInode(p1), 'primary socket open (probe)');
  t.ok(backupInode, 'backup socket open');

  const next = { ...spec, input: [{ type: 'udp', port: p3 }, spec.input[1]] };
  await s.update(streamResource(next), [
    { path: 'input[0].port', before: p1, after: p3, apply: 'restart', scope: 'input[0]' },
  ]);
  t.notOk(udpInode(p1), 'old primary socket closed');
  t.ok(udpInode(p3), 'primary reopened on the new port');
  t.equal(udpInode(p2), backupInode, 'backup kept the very same socket (inode)');
  t.equal(s.state(), 'running', 'still running');

  // Hot fields (the plan says "update in place"): no input is reopened.
  const primaryInode = udpInode(p3);
  await s.update(streamResource({ ...next, 'check-interval': 2_000_000, 'epg-export': true }), [
    { path: 'check-interval', before: undefined, after: 2_000_000, apply: 'hot' },
    { path: 'epg-export', before: undefined, after: true, apply: 'hot' },
  ]);
  t.equal(udpInode(p3), primaryInode, 'hot fields: the primary keeps its socket');
  t.equal(udpInode(p2), backupInode, 'hot fields: the backup keeps its socket');
  t.equal(s.state(), 'running', 'hot fields: still running');

  await s.update(streamResource({ ...next, pause: true }), [
    { path: 'pause', before: false, after: true, apply: 'hot' },
  ]);
  t.equal(s.state(), 'paused');
  t.notOk(udpInode(p2) ?? udpInode(p3), 'pause closes the inputs');

  await s.update(streamResource(next), [
    { path: 'pause', before: true, after: false, apply: 'hot' },
  ]);
  await waitFor(() => s.state() === 'running', 5000, 'running again');
  await s.close();
  t.notOk(udpInode(p2) ?? udpInode(p3), 'close leaves no socket');
  t.equal(s.status()['state'], 'paused');
});

t.test('junk input never crashes; good input recovers the stream', async (t) => {
  const port = await freePort();
  const s = (await driver.create(
    streamResource({ 'stream-name': 'junk', input: [{ type: 'udp', port }] }),
    host,
  )) as StreamInstance;
  t.teardown(() => s.close());
  const tx = dgram.createSocket('udp4');
  t.teardown(() => tx.close());
  const send = (b: Buffer) => new Promise<void>((r) => tx.send(b, port, '127.0.0.1', () => r()));
  for (let i = 0; i < 200; i++) await send(randomBytes(1316)); // random bytes
  for (let i = 0; i < 200; i++) await send(randomBytes(1 + (i % 180))); // truncated datagrams
  const datagrams = () =>
    Number(
      (s.status()['inputs'] as { transport: { datagrams: number } }[])[0]!.transport.datagrams,
    );
  await waitFor(() => datagrams() >= 400, 3000, 'all 400 datagrams taken in');
  t.not(s.state(), 'running', 'random bytes are not valid TS');
  const broken = randomBytes(1316); // packets whose sync breaks every third packet
  for (let o = 0; o < 1316; o += 188) broken[o] = o === 376 ? 0x00 : 0x47;
  for (let i = 0; i < 200; i++) await send(broken);
  const burst = randomBytes(1316);
  // A burst as fast as loopback allows, yielding now and then so the sends drain.
  for (let k = 0; k < 20; k++) {
    for (let i = 0; i < 1000; i++) tx.send(burst, port, '127.0.0.1');
    await send(burst);
  }
  const inp = await waitFor(
    () => {
      const i = (s.status()['inputs'] as Record<string, unknown>[])[0]!;
      return Number(i['junkBytes']) > 0 ? i : undefined;
    },
    3000,
    'junk counted',
  );
  t.ok(Number(inp?.['junkBytes']) > 0, `junk counted (${inp?.['junkBytes']} bytes)`);
  playFixture(t, fixture, 'mpegts', `udp://127.0.0.1:${port}?pkt_size=1316`);
  await waitFor(() => s.state() === 'running', 5000, 'recovered on good input');
  t.pass('stream recovered');
});

t.test('a stopped pipeline takes its outputs off the bus', async (t) => {
  const [inPort, outPort] = [await freePort(), await freePort()];
  const spec = {
    'stream-name': 'outs',
    input: [{ type: 'udp', port: inPort }],
    output: [{ type: 'udp', address: '127.0.0.1', port: outPort }],
  };
  const s = (await driver.create(streamResource(spec), host)) as StreamInstance;
  t.teardown(() => s.close());
  const sinks = s.hub.size;
  for (const pause of [true, false, true, false]) {
    await s.update(streamResource({ ...spec, pause }), [
      { path: 'pause', before: !pause, after: pause, apply: 'hot' },
    ]);
  }
  await s.update(streamResource({ ...spec, 'bitrate-mode': 1 }), [
    { path: 'bitrate-mode', before: 0, after: 1, apply: 'restart' },
  ]);
  t.equal(s.hub.size, sinks, 'as many bus sinks after two pauses and a restart as at start');
});
