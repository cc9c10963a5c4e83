// Every batch of a UdpReceiver is delivered in a block of the receiver's small reused pool (no
// new ArrayBuffer per batch), with the right bytes during the onData call.
import t from 'tap';
import { UdpReceiver } from '../../src/native/udp.ts';
import { stepwise } from '../helpers/udp-stepwise.ts';

const DATAGRAMS = 40;
const SIZE = 1316;

t.test('batches reuse one block and carry their own bytes during the call', async (t) => {
  const blocks = new Set<ArrayBufferLike>();
  const seen: number[] = [];
  let wrong = 0;
  // One datagram per batch (test/helpers/udp-stepwise.ts).
  const tx = stepwise();
  t.teardown(() => tx.close());
  const rx = new UdpReceiver({
    port: 0,
    address: '127.0.0.1',
    batchLatencyMs: 0,
    onData: (batch, n, lengths) => {
      blocks.add(batch.buffer);
      let o = 0;
      for (let i = 0; i < n; i++) {
        const len = lengths[i]!;
        const tag = batch[o]!;
        // Every byte of datagram k is k: a stale or overwritten view would show another value.
        for (let j = o; j < o + len; j++) if (batch[j] !== tag) wrong++;
        seen.push(tag);
        o += len;
      }
      tx.delivered();
    },
  });
  t.teardown(() => rx.close());
  await tx.send(
    rx.port,
    Array.from({ length: DATAGRAMS }, (_, k) => Buffer.alloc(SIZE, k)),
    () => seen.length,
  );
  t.equal(seen.length, DATAGRAMS, 'every datagram arrived');
  t.same(
    seen,
    Array.from({ length: DATAGRAMS }, (_, k) => k),
    'in order',
  );
  t.equal(wrong, 0, 'each batch had its own bytes while onData ran');
  t.equal(rx.stats().batches, DATAGRAMS, 'one batch per datagram');
  // One batch at a time: the block handed back after each call is the next one filled.
  t.equal(blocks.size, 1, 'all batches were views of the same reused block');
});
