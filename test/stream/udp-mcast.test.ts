// Multicast details of the udp input on loopback: a source-specific join (ssm-address) takes
// only its source's datagrams — the kernel's source filter is visible in /proc/net/mcfilter —
// and mcast-rejoin-interval re-joins the group periodically without interrupting the stream.
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

const GROUP = '232.1.1.5';
/** An IPv4 address as /proc/net/igmp prints it (the network-order word as a host int, %08X). */
const procHex = (ip: string) =>
  Buffer.from(ip.split('.').map(Number))
    .readUInt32LE(0)
    .toString(16)
    .toUpperCase()
    .padStart(8, '0');

/** An IPv4 address as /proc/net/mcfilter prints it (0x + host-order hex). */
const filterHex = (ip: string) =>
  `0x${Buffer.from(ip.split('.').map(Number)).readUInt32BE(0).toString(16).padStart(8, '0')}`;

const dir = tempDir(t);
const fixture = makeFixture(dir, 5);
const host = makeHost(dir);
const driver = new StreamDriver();

async function create(name: string, input: Record<string, unknown>): Promise<StreamInstance> {
  const s = (await driver.create(
    streamResource({ 'stream-name': name, input: [{ type: 'udp', ...input }] }),
    host,
  )) as StreamInstance;
  t.teardown(() => s.close());
  return s;
}
const transport = (s: StreamInstance) =>
  ((s.status()['inputs'] as Record<string, unknown>[])[0]!['transport'] ?? {}) as Record<
    string,
    number
  >;

t.test('SSM: each stream takes only its own source', async (t) => {
  const port = await freePort();
  // ffmpeg sends from 127.0.0.1; a Node socket bound to 127.0.0.2 sends junk to the same group.
  playFixture(
    t,
    fixture,
    'mpegts',
    `udp://${GROUP}:${port}?pkt_size=1316&localaddr=127.0.0.1&ttl=1`,
  );
  const a = await create('ssm-a', {
    address: GROUP,
    port,
    'bind-if': '127.0.0.1',
    'ssm-address': '127.0.0.1',
  });
  const b = await create('ssm-b', {
    address: GROUP,
    port,
    'bind-if': 'lo',
    'ssm-address': '127.0.0.2',
  });
  const filters = readFileSync('/proc/net/mcfilter', 'utf8')
    .split('\n')
    .map((l) => l.trim().split(/\s+/))
    .filter((f) => f[2] === filterHex(GROUP))
    .map((f) => f[3]);
  t.same(
    filters.sort(),
    [filterHex('127.0.0.1'), filterHex('127.0.0.2')],
    'the kernel filters the group by source: one entry per stream (/proc/net/mcfilter)',
  );

  const tx = dgram.createSocket('udp4');
  await new Promise<void>((r) => tx.bind(0, '127.0.0.2', () => r()));
  tx.setMulticastInterface('127.0.0.1');
  t.teardown(() => tx.close());
  const junk = Buffer.alloc(1316, 0x47);
  const SENT = 40;
  for (let i = 0; i < SENT; i++) {
    await new Promise<void>((r) => tx.send(junk, port, GROUP, () => r()));
  }
  await waitFor(() => a.state() === 'running', 5000, 'stream a running on the 127.0.0.1 source');
  await waitFor(() => transport(b)['datagrams'] === SENT, 3000, 'b received the junk');
  // ffmpeg's source goes on sending to the same group: let a see ~1 s of it (about 60
  // datagrams of 1316 bytes), which b must not see.
  const seenByA = transport(a)['datagrams']!;
  await waitFor(() => transport(a)['datagrams']! >= seenByA + 60, 5000, 'a receiving more');
  t.equal(transport(b)['datagrams'], SENT, 'b got exactly the 127.0.0.2 datagrams, none of ffmpeg');
  t.not(b.state(), 'running', 'b never saw the real stream');
  const inA = (a.status()['inputs'] as Record<string, unknown>[])[0]!;
  t.equal(inA['junkBytes'], 0, 'a never saw the junk');
  t.equal(inA['validity'], 'valid');
});

t.test('mcast-rejoin-interval re-joins without interrupting the stream', async (t) => {
  const port = await freePort();
  const group = '239.1.2.3';
  playFixture(
    t,
    fixture,
    'mpegts',
    `udp://${group}:${port}?pkt_size=1316&localaddr=127.0.0.1&ttl=1`,
  );
  const s = await create('rejoin', {
    address: group,
    port,
    'bind-if': '127.0.0.1',
    'mcast-rejoin-interval': 1,
  });
  await waitFor(() => s.state() === 'running', 5000, 'running');
  await waitFor(() => transport(s)['rejoins']! >= 2, 4000, 'two re-joins');
  const before = transport(s)['datagrams']!;
  await waitFor(() => transport(s)['datagrams']! > before + 20, 3000, 'datagrams after re-joins');
  t.ok(transport(s)['rejoins']! >= 2, `re-joined ${transport(s)['rejoins']} times`);
  t.equal(s.state(), 'running', 'still running');
  t.match(readFileSync('/proc/net/igmp', 'utf8'), procHex(group), 'still a member of the group');
  t.notOk(transport(s)['lastError'], 'no re-join error');
});
