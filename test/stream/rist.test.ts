// RIST input with real peers (ffmpeg's librist protocol, ristsender from rist-tools) on loopback:
// simple and main profile into a stream, the stream's HTTP-TS output decoded by ffprobe; main
// with a passphrase (and a wrong one refused); allow-conn-ip; junk, a flood of junk, a sender
// that vanishes; port clashes and reconcile granularity. Loss and recovery: rist-loss.test.ts.
// The simple profile needs an even port and the next one (picked here, not by the kernel).
import { randomBytes } from 'node:crypto';
import { createSocket } from 'node:dgram';
import { readFileSync } from 'node:fs';
import t from 'tap';
import type { StreamInstance } from '../../src/drivers/stream/instance.ts';
import {
  ccErrors,
  evenPortPair,
  expectSource,
  input0,
  ristHarness,
  transport,
} from '../helpers/rist.ts';
import { ffprobe, freePort, peer, streamResource, waitFor } from '../helpers/stream-host.ts';

const { host, driver, base, stream, ffmpegRist, ristsender } = await ristHarness(t);

t.test('main profile from ristsender', async (t) => {
  const port = await freePort();
  await ristsender(t, ['-p', '1', '-o', `rist://127.0.0.1:${port}`]);
  const s = await stream(t, 'rist-main', {
    'rist-profile': 1,
    'rist-addr-port': [port],
    'rist-addr-intf': ['127.0.0.1'],
  });
  expectSource(t, await ffprobe(`${base}/rist-main/mpegts`));
  const tr = transport(s);
  t.equal(tr['profile'], 'main');
  t.equal(tr['peersConnected'], 1, 'one sender connected');
  await waitFor(() => Number(transport(s)['received']) > 0, 5000, 'librist flow stats');
});

t.test('simple profile from ffmpeg, on an even port and the next', async (t) => {
  const port = await evenPortPair();
  ffmpegRist(t, `rist://127.0.0.1:${port}`, ['-rist_profile', 'simple']);
  const s = await stream(t, 'rist-simple', {
    'rist-profile': 0,
    'rist-addr-port': [port],
    'rist-addr-intf': ['127.0.0.1'],
  });
  expectSource(t, await ffprobe(`${base}/rist-simple/mpegts`));
  t.equal(transport(s)['profile'], 'simple');
});

t.test('main profile with a passphrase; a wrong one delivers nothing', async (t) => {
  const port = await freePort();
  const secret = 'correct horse battery staple';
  ffmpegRist(t, `rist://127.0.0.1:${port}`, ['-secret', secret, '-encryption', '128']);
  const s = await stream(t, 'rist-aes', {
    'rist-addr-port': [port],
    'rist-addr-intf': ['127.0.0.1'],
    passphrase: secret,
  });
  expectSource(t, await ffprobe(`${base}/rist-aes/mpegts`));
  t.equal(transport(s)['encrypted'], true);

  const port2 = await freePort();
  ristsender(t, [
    '-p',
    '1',
    '-s',
    'another secret',
    '-e',
    '128',
    '-o',
    `rist://127.0.0.1:${port2}`,
  ]);
  const bad = await stream(
    t,
    'rist-aes-bad',
    { 'rist-addr-port': [port2], 'rist-addr-intf': ['127.0.0.1'], passphrase: secret },
    false,
  );
  await waitFor(
    () => Number(transport(bad)['received']) > 0 || !!input0(bad)['message'],
    8000,
    'sender seen',
  );
  // The receiver has seen the sender and refused its packets: that is the event to wait for.
  await waitFor(
    () => /passphrase does not match/.test(String(input0(bad)['message'] ?? '')),
    8000,
    'the key mismatch reported',
  );
  t.not(bad.state(), 'running', 'no transport stream from a sender with another key');
  t.equal(Number(input0(bad)['packets'] ?? 0), 0, 'no TS packets delivered');
  t.match(String(input0(bad)['message']), /passphrase does not match/, 'the mismatch in words');
});

t.test('allow-conn-ip refuses another sender and says so', async (t) => {
  const port = await freePort();
  ffmpegRist(t, `rist://127.0.0.1:${port}`);
  const s = await stream(
    t,
    'rist-allow',
    { 'rist-addr-port': [port], 'rist-addr-intf': ['127.0.0.1'], 'allow-conn-ip': '127.0.0.2' },
    false,
  );
  await waitFor(() => Number(transport(s)['rejected']) > 0, 8000, 'a refusal');
  await waitFor(
    () => /refused a sender at 127\.0\.0\.1/.test(String(input0(s)['message'] ?? '')),
    5000,
    'the refusal as the message',
  );
  t.equal(Number(transport(s)['packets']), 0, 'nothing delivered from the refused sender');
});

t.test('junk at the port, a sender that vanishes and comes back', async (t) => {
  const port = await freePort();
  const s = await stream(
    t,
    'rist-vanish',
    { 'rist-addr-port': [port], 'rist-addr-intf': ['127.0.0.1'], 'rist-session-timeout': 500 },
    false,
  );
  // random bytes first: librist drops them, nothing reaches the stream, nothing breaks
  const junk = createSocket('udp4');
  for (let i = 0; i < 200; i++) {
    junk.send(
      Buffer.from(Array.from({ length: 1 + (i % 1400) }, () => (Math.random() * 256) | 0)),
      port,
      '127.0.0.1',
    );
  }
  // fixed wait: that nothing is delivered over a while is what is checked here.
  await new Promise((r) => setTimeout(r, 300));
  junk.close();
  t.equal(Number(transport(s)['packets']), 0, 'junk is not delivered');
  const udp = await freePort();
  const sender = peer(t, 'ristsender', [
    '-v',
    '3',
    '-i',
    `udp://@127.0.0.1:${udp}`,
    '-p',
    '1',
    '-o',
    `rist://127.0.0.1:${port}`,
  ]);
  ffmpegRist(t, `udp://127.0.0.1:${udp}?pkt_size=1316`);
  await waitFor(() => s.state() === 'running', 15_000, 'running after the junk');
  sender.kill('SIGKILL');
  await waitFor(() => Number(transport(s)['timeouts']) > 0, 10_000, 'the session timed out');
  await waitFor(
    () => /went silent|no RIST sender/.test(String(input0(s)['message'] ?? '')),
    10_000,
    'said in words',
  );
  t.pass(`message: ${String(input0(s)['message'])}`);
  const before = Number(transport(s)['packets']);
  peer(t, 'ristsender', [
    '-v',
    '3',
    '-i',
    `udp://@127.0.0.1:${udp}`,
    '-p',
    '1',
    '-o',
    `rist://127.0.0.1:${port}`,
  ]);
  await waitFor(() => Number(transport(s)['packets']) > before + 100, 15_000, 'data again');
  await waitFor(() => input0(s)['state'] === 'receiving', 10_000, 'receiving again');
  t.equal(transport(s)['peersConnected'], 1);
});

t.test(
  'a closed stream frees its RIST port at once; a second input on a port in use says so',
  async (t) => {
    const port = await freePort();
    const a = (await driver.create(
      streamResource({
        'stream-name': 'rist-port-a',
        input: [{ type: 'rist', 'rist-addr-port': [port], 'rist-addr-intf': ['127.0.0.1'] }],
      }),
      host,
    )) as StreamInstance;
    t.teardown(() => a.close());
    const dup = await stream(
      t,
      'rist-port-dup',
      { 'rist-addr-port': [port], 'rist-addr-intf': ['127.0.0.1'] },
      false,
    );
    await waitFor(
      () => /EADDRINUSE|address already in use/i.test(String(input0(dup)['message'] ?? '')),
      5000,
      'the clash reported',
    );
    t.pass(`message: ${String(input0(dup)['message'])}`);
    await dup.close();
    await a.close();
    ffmpegRist(t, `rist://127.0.0.1:${port}`);
    const b = await stream(t, 'rist-port-b', {
      'rist-addr-port': [port],
      'rist-addr-intf': ['127.0.0.1'],
    });
    t.equal(b.state(), 'running', 'the port was free for the next input right after close');
  },
);

/** Inode of the UDP socket bound to `port`, or undefined (librist's own listening socket). */
function udpInode(port: number): string | undefined {
  const hex = port.toString(16).toUpperCase().padStart(4, '0');
  for (const line of readFileSync('/proc/net/udp', 'utf8').split('\n').slice(1)) {
    const f = line.trim().split(/\s+/);
    if (f[1]?.endsWith(`:${hex}`)) return f[9];
  }
  return undefined;
}

t.test('a change to one rist input restarts that input only', async (t) => {
  const [p1, p2, p3] = [await freePort(), await freePort(), await freePort()];
  ffmpegRist(t, `rist://127.0.0.1:${p2}`);
  const rist = (port: number) => ({
    type: 'rist',
    'rist-addr-port': [port],
    'rist-addr-intf': ['127.0.0.1'],
  });
  // A RIST input delivers its first packets one recovery buffer (1 s) after it opens: the
  // stream-timeout each input gets to prove itself must be longer (docs/transports.md).
  const spec = {
    'stream-name': 'rist-rc',
    'stream-timeout': 4_000_000,
    input: [rist(p1), rist(p2)],
  };
  const s = (await driver.create(streamResource(spec), host)) as StreamInstance;
  t.teardown(() => s.close());
  await waitFor(
    () => s.status()['activeInput'] === 1 && s.state() === 'running',
    20_000,
    'on the backup',
  );
  const backup = udpInode(p2);
  t.ok(udpInode(p1) && backup, 'both inputs listen');
  const next = { ...spec, input: [rist(p3), rist(p2)] };
  await s.update(streamResource(next), [
    {
      path: 'input[0].rist-addr-port',
      before: [p1],
      after: [p3],
      apply: 'restart',
      scope: 'input[0]',
    },
  ]);
  t.notOk(udpInode(p1), 'the old port is free at once');
  t.ok(udpInode(p3), 'the changed input listens on its new port');
  t.equal(udpInode(p2), backup, 'the other input kept its very socket');
  t.equal(s.state(), 'running', 'still running');
});

t.test('a bounded flood of junk from 200 source ports beside a real sender', async (t) => {
  const port = await freePort();
  ffmpegRist(t, `rist://127.0.0.1:${port}`);
  const s = await stream(t, 'rist-flood', {
    'rist-addr-port': [port],
    'rist-addr-intf': ['127.0.0.1'],
  });
  const cc = ccErrors(s);
  const socks = await Promise.all(
    Array.from({ length: 200 }, async () => {
      const u = createSocket('udp4');
      await new Promise<void>((r) => u.bind(0, '127.0.0.1', () => r()));
      return u;
    }),
  );
  t.teardown(() => {
    for (const u of socks) u.close();
  });
  for (let round = 0; round < 10; round++) {
    for (const u of socks) {
      const b = randomBytes(12 + ((Math.random() * 1300) | 0));
      // half of them start like a RIST main-profile GRE header (version 0, protocol 0x88B6)
      if (round % 2) b.writeUInt32BE(0x000088b6, 0);
      u.send(b, port, '127.0.0.1');
    }
    await new Promise((r) => setTimeout(r, 20)); // fixed wait: paces the junk sender
  }
  // The real sender is still delivered after the junk: wait for its packets to move on.
  const after = Number(transport(s)['packets']);
  await waitFor(() => Number(transport(s)['packets']) > after + 100, 10_000, 'packets after junk');
  t.equal(s.state(), 'running', 'the stream kept running');
  t.equal(input0(s)['state'], 'receiving', 'the real sender is still received');
  t.equal(ccErrors(s), cc, 'no CC error from the junk');
  t.equal(Number(transport(s)['peersConnected']), 1, 'only the real sender counts as a peer');
  t.ok(process.memoryUsage().rss < 1024 * 1024 * 1024, 'memory bounded');
});
