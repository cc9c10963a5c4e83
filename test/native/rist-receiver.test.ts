// The RIST receiver's façade and native core without the stream: argument checks before the
// call crosses into C++, the 127-byte secret, peer URLs; lifecycle (close frees the port at once,
// idempotent, no onData after it; a port in use is refused with librist's reason); and the
// overload path: a consumer slower than the stream makes the receiver shed batches at its queue
// (queueDrops) instead of blocking librist or growing without bound.
import { createSocket } from 'node:dgram';
import t from 'tap';
import { addon } from '../../src/native/addon.ts';
import { RistReceiver, RistSender, ristPeerUrl, ristSecret } from '../../src/native/rist.ts';
import { freePort, makeFixture, peer, tempDir, waitFor } from '../helpers/stream-host.ts';

const noop = () => {};

t.test('arguments are checked before the addon sees them', async (t) => {
  const bad = (o: Record<string, unknown>, re: RegExp) =>
    t.throws(
      () => new RistReceiver({ profile: 1, peers: [{ port: 5000 }], onData: noop, ...o } as never),
      { code: 'ERR_NATIVE_ARG', message: re },
    );
  bad({ profile: 2 }, /profile/);
  bad({ peers: [] }, /peers/);
  bad({ profile: 0, peers: [{ port: 5001 }] }, /even port/);
  bad({ peers: [{ port: 70000 }] }, /port/);
  bad({ peers: [{ port: 5000, address: 'nope' }] }, /address/);
  bad({ allowIp: 'x' }, /allowIp/);
  bad({ keySize: 192 }, /keySize/);
  bad({ rttMinMs: -1 }, /rttMinMs/);
  bad({ onData: 1 }, /onData/);
});

t.test('secret: at most 127 bytes, never cut inside a character', async (t) => {
  t.equal(ristSecret('short'), 'short');
  t.equal(Buffer.byteLength(ristSecret('a'.repeat(200))), 127);
  // 126 ASCII bytes then a 3-byte character: 129 bytes; the character does not fit whole.
  const s = ristSecret(`${'b'.repeat(126)}€x`);
  t.equal(s, 'b'.repeat(126));
});

t.test('peer URLs: unicast listens on the interface, multicast on the group', async (t) => {
  t.equal(ristPeerUrl({ port: 6000, intf: '127.0.0.1' }), 'rist://@127.0.0.1:6000');
  t.equal(ristPeerUrl({ port: 6000, intf: 'lo' }), 'rist://@127.0.0.1:6000');
  t.equal(ristPeerUrl({ port: 6000 }), 'rist://@0.0.0.0:6000');
  t.equal(ristPeerUrl({ port: 6000, address: '239.1.2.3', intf: 'lo' }), 'rist://@239.1.2.3:6000');
  t.throws(() => ristPeerUrl({ port: 6000, intf: 'no-such-if0' }), { code: 'ENODEV' });
});

t.test('close frees the port at once, is idempotent, and ends the callbacks', async (t) => {
  const port = await freePort();
  const a = new RistReceiver({ profile: 1, peers: [{ port, intf: '127.0.0.1' }], onData: noop });
  t.teardown(() => a.close());
  t.throws(
    () => new RistReceiver({ profile: 1, peers: [{ port, intf: '127.0.0.1' }], onData: noop }),
    { code: 'EADDRINUSE', name: 'NativeError' },
    'a second receiver on the same port is refused (librist alone would share it)',
  );
  const port2 = await freePort();
  const other = createSocket('udp4');
  await new Promise<void>((r) => other.bind(port2 + 0, '127.0.0.1', () => r()));
  t.throws(
    () =>
      new RistReceiver({ profile: 1, peers: [{ port: port2, intf: '127.0.0.1' }], onData: noop }),
    { code: 'EADDRINUSE', message: /127\.0\.0\.1/ },
    'a port another socket holds is refused with the address in the message',
  );
  other.close();
  a.close();
  a.close();
  t.equal(a.closed, true);
  const b = new RistReceiver({ profile: 1, peers: [{ port, intf: '127.0.0.1' }], onData: noop });
  t.teardown(() => b.close());
  t.pass('the port is free again right after close()');
  b.close();
});

t.test('a slow consumer: batches are shed at the queue, the receiver keeps going', async (t) => {
  const dir = tempDir(t);
  const fixture = makeFixture(dir, 4);
  const port = await freePort();
  let calls = 0;
  let afterClose = 0;
  let closed = false;
  const rx = new RistReceiver({
    profile: 1,
    peers: [{ port, intf: '127.0.0.1' }],
    batchBlocks: 1,
    batchLatencyMs: 1,
    queueBatches: 2,
    onData: () => {
      if (closed) afterClose++;
      calls++;
      const until = Date.now() + 40; // far slower than the ~60 blocks a second sent
      while (Date.now() < until);
    },
  });
  t.teardown(() => rx.close());
  peer(t, 'ffmpeg', [
    ...['-hide_banner', '-loglevel', 'error', '-re', '-stream_loop', '-1', '-i', fixture],
    ...['-c', 'copy', '-f', 'mpegts', `rist://127.0.0.1:${port}`],
  ]);
  // Both, in either order: on a busy machine the queue can overflow before the first drain.
  await waitFor(() => rx.stats().queueDrops > 5 && calls > 0, 15_000, 'queue drops and a delivery');
  const s = rx.stats();
  t.ok(s.queued <= 2, `queue bounded (${s.queued})`);
  t.ok(calls > 0, 'batches still delivered');
  rx.close();
  closed = true;
  // A drain already scheduled runs on the next turns of the loop (setImmediate): let them pass.
  for (let i = 0; i < 3; i++) await new Promise((r) => setImmediate(r));
  t.equal(afterClose, 0, 'no onData after close()');
  t.ok(rx.stats().queueDrops > 5, 'stats kept after close()');
});

t.test('RistSender: arguments checked, write after close refused, close idempotent', async (t) => {
  const bad = (o: Record<string, unknown>, re: RegExp) =>
    t.throws(
      () =>
        new RistSender({
          profile: 1,
          peers: [{ address: '127.0.0.1', port: 5000 }],
          ...o,
        } as never),
      {
        code: 'ERR_NATIVE_ARG',
        message: re,
      },
    );
  bad({ profile: 3 }, /profile/);
  bad({ peers: [] }, /peers must be/);
  bad({ peers: [{ address: '', port: 5000 }] }, /peers\[0\]\.address/);
  bad(
    {
      peers: [
        { address: '127.0.0.1', port: 5000 },
        { address: 'a/b', port: 5000 },
      ],
    },
    /peers\[1\]\.address/,
  );
  bad({ peers: [{ address: '127.0.0.1', port: 0 }] }, /peers\[0\]\.port/);
  bad({ profile: 0, peers: [{ address: '127.0.0.1', port: 5001 }] }, /even port/);
  bad({ peers: [{ address: '127.0.0.1', port: 5000, weight: -1 }] }, /weight/);
  bad({ keySize: 64 }, /keySize/);
  const port = await freePort();
  const got: number[] = [];
  const rx = new RistReceiver({
    profile: 1,
    peers: [{ port, intf: '127.0.0.1' }],
    onData: (_b, _n, lengths) => got.push(...lengths),
  });
  t.teardown(() => rx.close());
  const tx = new RistSender({ profile: 1, peers: [{ address: '127.0.0.1', port }] });
  t.teardown(() => tx.close());
  // 10 packets then 11: 21 packets = three 7-packet payloads; the tail of the first write
  // waits for the second
  const pkt = Buffer.alloc(188, 0xff);
  pkt[0] = 0x47;
  tx.write(Buffer.concat(Array(10).fill(pkt)));
  tx.write(Buffer.concat(Array(11).fill(pkt)));
  await waitFor(() => got.length >= 3, 3000, 'three payloads');
  t.same(got, [1316, 1316, 1316], 'cut into three 7-packet payloads');
  t.equal(tx.stats().blocks, 3);
  tx.close();
  tx.close();
  t.throws(() => tx.write(pkt), { code: 'ERR_NATIVE_CLOSED' });
  t.equal(tx.stats().blocks, 3, 'stats kept after close()');
});

t.test(
  "librist's global log is not a receiver's: another context's messages stay out of it",
  async (t) => {
    // librist makes the first rist_logging_set of a process its global settings, callback and
    // argument included; its socket helpers log there. Were that a receiver's, the messages of
    // other contexts would land in it — and after its close() in freed memory. A host name that
    // does not resolve makes librist log through the global settings (the raw addon is used: the
    // façade only builds URLs from IPv4 addresses).
    const port = await freePort();
    const a = new RistReceiver({ profile: 1, peers: [{ port, intf: '127.0.0.1' }], onData: noop });
    t.teardown(() => a.close());
    const raw = addon();
    const b = new raw.RistReceiver(
      {
        profile: 1,
        peers: [{ url: 'rist://@no-such-host.invalid:5000', weight: 5, probeHost: '', port: 0 }],
        allowIp: '',
        sessionTimeoutMs: 2000,
        rttMinMs: 50,
        rttMaxMs: 500,
        bufferMs: 1000,
        secret: '',
        keySize: 128,
        logLevel: 4,
        batchBlocks: 64,
        batchLatencyMs: 20,
        queueBatches: 8,
        statsIntervalMs: 1000,
        pump: noop,
      },
      noop,
    );
    b.close();
    t.equal(a.stats().lastLog, '', 'the first receiver logged nothing of the other context');
    t.equal(a.stats().errors, 0);
  },
);
