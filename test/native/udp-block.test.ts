// Every batch of a UdpReceiver is delivered in a block of the receiver's small reused pool (no
// new ArrayBuffer per batch), with the right bytes during the onData call.
import dgram from 'node:dgram';
import t from 'tap';
import { UdpReceiver } from '../../src/native/udp.ts';

const DATAGRAMS = 40;
const SIZE = 1316;

t.test('batches reuse one block and carry their own bytes during the call', async (t) => {
  const blocks = new Set<ArrayBufferLike>();
  const seen: number[] = [];
  let wrong = 0;
  // Each datagram is sent only once the previous one has been delivered, so every batch
  // holds exactly one datagram whatever the scheduling: no timing decides the batch count.
  let delivered: (() => void) | null = null;
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
      delivered?.();
    },
  });
  t.teardown(() => rx.close());
  const tx = dgram.createSocket('udp4');
  t.teardown(() => tx.close());
  for (let k = 0; k < DATAGRAMS; k++) {
    await new Promise<void>((resolve, reject) => {
      const timer = setTimeout(
        () => reject(new Error(`datagram ${k} not delivered within 5 s`)),
        5000,
      );
      delivered = () => {
        if (seen.length > k) {
          clearTimeout(timer);
          resolve();
        }
      };
      tx.send(Buffer.alloc(SIZE, k), rx.port, '127.0.0.1');
    });
  }
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
