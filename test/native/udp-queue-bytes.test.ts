// A flooded UDP socket whose JS side is stalled keeps at most its byte bound queued (per socket
// and over the receive thread): the rest is shed as queueDrops, memory does not grow with it.
import { execFileSync, spawn } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import t from 'tap';
import { UdpReceiver, type UdpReceiverOptions } from '../../src/native/udp.ts';

const DATAGRAMS = 20_000; // 26 MB of 1316-byte datagrams, far over either bound
const STALL_CAP_MS = 15_000;
/** A batch still being filled when JS wakes is not queued yet: it may come on top. */
const BATCH_DATAGRAMS = 16;
const DATAGRAM = 1316;

const dir = mkdtempSync(join(tmpdir(), 'sluice-udpq-'));
t.teardown(() => rmSync(dir, { recursive: true, force: true }));
const sender = join(dir, 'udp-flood');
execFileSync('cc', ['-O2', '-o', sender, join(import.meta.dirname, '../helpers/udp-flood.c')]);

/**
 * Flood a receiver while its first onData holds the JS thread until the receive thread has
 * seen every datagram (read or dropped by the kernel); then count what JS is handed after.
 */
async function floodWhileStalled(opts: Partial<UdpReceiverOptions>) {
  let stalled = false;
  let after = 0;
  let maxQueued = 0;
  const r: UdpReceiver = new UdpReceiver({
    port: 0,
    address: '127.0.0.1',
    queueBatches: 65536, // the byte bounds are what is tested
    batchDatagrams: BATCH_DATAGRAMS,
    ...opts,
    onData: (batch) => {
      if (stalled) {
        after += batch.length;
        return;
      }
      stalled = true;
      const until = Date.now() + STALL_CAP_MS;
      for (;;) {
        const s = r.stats();
        maxQueued = Math.max(maxQueued, s.queuedBytes);
        if (s.datagrams + s.drops >= DATAGRAMS || Date.now() > until) break;
      }
    },
  });
  t.teardown(() => r.close());
  const p = spawn(sender, ['-', '127.0.0.1', String(r.port), '0', '10', String(DATAGRAMS)]);
  t.teardown(() => p.kill('SIGKILL'));
  await new Promise<void>((resolve) => p.once('exit', () => resolve()));
  // Everything the thread read has been handed over or shed once JS has caught up.
  for (;;) {
    const s = r.stats();
    if (s.queued === 0 && stalled) break;
    await new Promise<void>((resolve) => setImmediate(resolve));
  }
  const stats = r.stats();
  // Closed here, not at the file's end: a receiver left open would share the receive thread
  // with the next case's, and two sockets over the thread's bound shed the younger whole
  // (shedBatches, docs/native.md) where one alone drops the batch (queueDrops).
  r.close();
  return { stats, after, maxQueued };
}

t.test('a socket queues at most queueBytes while JS is stalled', async (t) => {
  const bound = 256 * 1024;
  const { stats, after, maxQueued } = await floodWhileStalled({ queueBytes: bound });
  t.ok(stats.datagrams > DATAGRAMS / 4, `${stats.datagrams} datagrams read by the thread`);
  t.ok(stats.queueDrops > 0, `${stats.queueDrops} batches shed at the socket's queue`);
  t.ok(maxQueued <= bound, `${maxQueued} bytes queued at most, bound ${bound}`);
  t.ok(after <= bound + BATCH_DATAGRAMS * DATAGRAM, `${after} bytes handed to JS after the stall`);
  t.equal(stats.queuedBytes, 0, 'nothing counted as queued once delivered');
});

t.test('all sockets together queue at most queueBytesTotal', async (t) => {
  const total = 512 * 1024;
  const { stats, after, maxQueued } = await floodWhileStalled({
    queueBytes: 64 << 20,
    queueBytesTotal: total,
  });
  t.ok(stats.queueDrops > 0, `${stats.queueDrops} batches shed over the thread's bound`);
  t.ok(maxQueued <= total, `${maxQueued} bytes queued at most, bound ${total}`);
  t.ok(after <= total + BATCH_DATAGRAMS * DATAGRAM, `${after} bytes handed to JS after`);
});
