// Run by test/stream/rist-multicast.test.ts inside a network namespace (helpers/netns.ts): a
// stream with a rist input on a multicast group (`rist-addr-address`), ristsender sending the
// fixture to that group, main profile. Prints one JSON line: what the input saw.
import { StreamDriver } from '../../src/drivers/stream/driver.ts';
import type { StreamInstance } from '../../src/drivers/stream/instance.ts';
import {
  freePort,
  makeFixture,
  makeHost,
  peer,
  streamResource,
  tempDir,
  waitFor,
} from './stream-host.ts';

const group = process.argv[2] ?? '239.255.0.5';
const teardowns: (() => unknown)[] = [];
const t = { teardown: (fn: () => unknown) => void teardowns.push(fn) };
type Status = Record<string, unknown>;

let result: Record<string, unknown>;
try {
  const dir = tempDir(t);
  const fixture = makeFixture(dir);
  const host = makeHost(dir);
  const port = await freePort();
  const s = (await new StreamDriver().create(
    streamResource({
      'stream-name': 'rist-mcast',
      input: [{ type: 'rist', 'rist-addr-address': [group], 'rist-addr-port': [port] }],
    }),
    host,
  )) as StreamInstance;
  t.teardown(() => s.close());
  const udp = await freePort();
  peer(t, 'ristsender', [
    '-v',
    '3',
    '-i',
    `udp://@127.0.0.1:${udp}`,
    '-o',
    `rist://${group}:${port}?miface=lo`,
  ]);
  peer(t, 'ffmpeg', [
    ...['-hide_banner', '-loglevel', 'error', '-re', '-stream_loop', '-1', '-i', fixture],
    ...['-map', '0', '-c', 'copy', '-f', 'mpegts', `udp://127.0.0.1:${udp}?pkt_size=1316`],
  ]);
  await waitFor(() => s.state() === 'running', 15_000, 'the stream runs');
  const input = (s.status()['inputs'] as Status[])[0]!;
  const bytes0 = Number((input['transport'] as Status)['bytes'] ?? 0);
  await waitFor(
    () =>
      Number(((s.status()['inputs'] as Status[])[0]!['transport'] as Status)['bytes'] ?? 0) >
      bytes0 + 200_000,
    15_000,
    'data goes on',
  );
  const now = (s.status()['inputs'] as Status[])[0]!;
  result = {
    state: s.state(),
    transport: now['transport'],
    ccErrors: Number((now['tr101290'] as Status | undefined)?.['continuityCountError'] ?? 0),
  };
} catch (err) {
  result = { error: (err as Error).message };
}
for (const fn of teardowns.reverse()) await fn();
process.stdout.write(`${JSON.stringify(result)}\n`);
process.exit(0);
