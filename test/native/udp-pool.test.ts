// The receive thread writes batches straight into the receiver's pool of blocks: the first
// datagram of each read lands in place (sized by the datagram before it), a larger one has its
// tail copied after it, and when JavaScript is behind and every block is in use, batches go
// through the heap and the one slab instead. Whatever the path, onData gets the exact bytes.
import dgram from 'node:dgram';
import t from 'tap';
import { UdpReceiver } from '../../src/native/udp.ts';
import { stepwise } from '../helpers/udp-stepwise.ts';

/** Datagram k: `size` bytes, byte j = (k * 31 + j) & 0xff, so a shifted or stale byte shows. */
function datagram(k: number, size: number): Buffer {
  const b = Buffer.alloc(size);
  for (let j = 0; j < size; j++) b[j] = (k * 31 + j) & 0xff;
  return b;
}

interface Got {
  k: number;
  ok: boolean;
  len: number;
}

/** Split a batch by its lengths and check each datagram against its pattern. */
function check(batch: Buffer, n: number, lengths: Int32Array, into: Got[]): void {
  let o = 0;
  for (let i = 0; i < n; i++) {
    const len = lengths[i]!;
    const k = into.length;
    const want = datagram(k, len);
    into.push({ k, ok: batch.subarray(o, o + len).equals(want), len });
    o += len;
  }
}

t.test('one datagram at a time, sizes smaller and larger than the one before', async (t) => {
  const sizes = [1316, 4000, 100, 1316, 4096, 2000, 1, 1316, 1316, 3000];
  const got: Got[] = [];
  const tx = stepwise();
  t.teardown(() => tx.close());
  const rx = new UdpReceiver({
    port: 0,
    address: '127.0.0.1',
    batchLatencyMs: 0,
    onData: (batch, n, lengths) => {
      check(batch, n, lengths, got);
      tx.delivered();
    },
  });
  t.teardown(() => rx.close());
  await tx.send(
    rx.port,
    sizes.map((size, k) => datagram(k, size)),
    () => got.length,
  );
  t.same(
    got.map((g) => g.len),
    sizes,
    'every length as sent',
  );
  t.same(
    got.filter((g) => !g.ok).map((g) => g.k),
    [],
    'every datagram byte-exact',
  );
  t.equal(rx.stats().truncated, 0, 'none truncated');
});

t.test('a burst while JavaScript is busy: pool, then heap batches, all exact', async (t) => {
  const COUNT = 2000;
  const sizeOf = (k: number) => [1316, 188, 1316, 1500, 1316, 4000, 1316][k % 7]!;
  const got: Got[] = [];
  const buffers = new Set<ArrayBufferLike>();
  let done: (() => void) | null = null;
  const rx = new UdpReceiver({
    port: 0,
    address: '127.0.0.1',
    bufferSize: 16 * 1024 * 1024,
    batchLatencyMs: 5,
    onData: (batch, n, lengths) => {
      buffers.add(batch.buffer);
      check(batch, n, lengths, got);
      if (got.length >= COUNT) done?.();
    },
  });
  t.teardown(() => rx.close());
  const tx = dgram.createSocket('udp4');
  t.teardown(() => tx.close());
  tx.bind(0, '127.0.0.1');
  await new Promise((r) => tx.once('listening', r));
  tx.setSendBufferSize(16 * 1024 * 1024);
  // Sent, then the JS thread is held until the receive thread has read the whole burst: its
  // batches, more than the pool holds, wait in the queue meanwhile.
  let sent = 0;
  await new Promise<void>((resolve) => {
    for (let k = 0; k < COUNT; k++) {
      tx.send(datagram(k, sizeOf(k)), rx.port, '127.0.0.1', () => {
        if (++sent === COUNT) resolve();
      });
    }
  });
  const deadline = Date.now() + 5000;
  while (rx.stats().datagrams < COUNT && Date.now() < deadline) {
    // busy: the event loop cannot drain
  }
  t.ok(rx.stats().queued > 3, `batches queued behind the held thread (${rx.stats().queued})`);
  await new Promise<void>((resolve, reject) => {
    const timer = setTimeout(
      () => reject(new Error(`${got.length} of ${COUNT} datagrams delivered`)),
      10_000,
    );
    done = () => {
      clearTimeout(timer);
      resolve();
    };
    if (got.length >= COUNT) done();
  });
  const s = rx.stats();
  t.equal(s.drops + s.queueDrops, 0, 'nothing dropped');
  t.equal(got.length, COUNT, 'every datagram');
  t.same(
    got.filter((g) => !g.ok).map((g) => g.k),
    [],
    'every datagram byte-exact, in order',
  );
  t.ok(s.batches > 10, `many batches (${s.batches})`);
  t.ok(buffers.size <= 9, `a bounded set of blocks (${buffers.size}: pool and slab)`);
});
