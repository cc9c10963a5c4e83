// SrtSender: the façade's argument checks, and a listener sender read by a SrtReceiver caller
// (messages of 1316 bytes, a tail kept for the next send), close() idempotent.
import t, { type Test } from 'tap';
import { NativeError } from '../../src/native/errors.ts';
import { SrtReceiver, SrtSender, type SrtSenderOptions } from '../../src/native/srt.ts';

function argFails(t: Test, opts: Partial<SrtSenderOptions>, re: RegExp): void {
  let caught: unknown;
  try {
    new SrtSender({ mode: 'listener', port: 0, ...opts } as SrtSenderOptions).close();
  } catch (err) {
    caught = err;
  }
  t.ok(caught instanceof NativeError, `${re.source}: a NativeError`);
  t.equal((caught as NativeError).code, 'ERR_NATIVE_ARG');
  t.match((caught as NativeError).message, re);
}

t.test('argument checks before the addon', async (t) => {
  argFails(t, { mode: 'push' as 'caller' }, /mode must be/);
  argFails(t, { mode: 'caller', port: 9000 }, /caller needs an address/);
  argFails(t, { port: -1 }, /port must be/);
  argFails(t, { address: 'example.org' }, /address must be an IPv4/);
  argFails(t, { passphrase: 'short' }, /passphrase must be 10 to 79 bytes/);
  argFails(t, { passphrase: 'long enough', keyLength: 8 as 16 }, /keyLength/);
  argFails(t, { maxCallers: 0 }, /maxCallers/);
  argFails(t, { latencyMs: -5 }, /latencyMs/);
  argFails(t, { peerProof: 'a,b' }, /peerProof/);
});

t.test('listener sender → caller receiver: whole messages, the tail kept', async (t) => {
  const tx = new SrtSender({ mode: 'listener', port: 0 });
  t.teardown(() => tx.close());
  const got: number[] = [];
  const rx = new SrtReceiver({
    mode: 'caller',
    address: '127.0.0.1',
    port: tx.port,
    onData: (_b, n, lengths) => {
      for (let i = 0; i < n; i++) got.push(lengths[i]!);
    },
  });
  t.teardown(() => rx.close());
  const end = Date.now() + 10_000;
  while (tx.stats().peers.length === 0 || !rx.stats().connected) {
    const ev = tx.poll();
    if (ev.some((e) => e.type === 'fault')) throw new Error('fault');
    if (Date.now() > end) throw new Error('no connection');
    await new Promise((r) => setTimeout(r, 20));
  }
  const packet = Buffer.alloc(188, 0xff);
  packet[0] = 0x47;
  tx.send(Buffer.concat(Array.from({ length: 10 }, () => packet))); // 1 message + 3 packets
  tx.send(Buffer.concat(Array.from({ length: 4 }, () => packet))); // completes the second
  while (got.length < 2) {
    if (Date.now() > end) throw new Error('no data');
    await new Promise((r) => setTimeout(r, 20));
  }
  t.same(got, [1316, 1316], 'two whole 7-packet messages');
  t.equal(tx.stats().messages, 2);
  t.equal(tx.stats().totals.sent, 2, 'libsrt counted them');
  // The peer goes: its counts stay in the totals (a /metrics counter never goes back).
  rx.close();
  while (tx.stats().peers.length > 0) {
    tx.poll();
    if (Date.now() > end + 10_000) throw new Error('the peer did not go');
    await new Promise((r) => setTimeout(r, 20));
  }
  t.equal(tx.stats().totals.sent, 2, 'kept after the peer went');
  tx.close();
  tx.close();
  t.equal(tx.closed, true);
  t.same(tx.poll(), []);
});
