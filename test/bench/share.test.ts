// The benches' received-share arithmetic (bench/lib/share.ts): streams per core count only
// what a receiver got, so one that drops half its input is not shown as twice as cheap.
import t from 'tap';
import { receivedShare, streamsPerCore } from '../../bench/lib/share.ts';

t.test('received share: bytes received over bytes sent, within 0..1', async (t) => {
  t.equal(receivedShare(1316 * 50, 1316 * 100), 0.5);
  t.equal(receivedShare(1316 * 100, 1316 * 100), 1);
  t.equal(receivedShare(1316 * 101, 1316 * 100), 1, 'a datagram sent before the window is not >1');
  t.equal(receivedShare(0, 1316), 0);
  t.equal(receivedShare(1316, 0), 0, 'nothing sent: no share, not a division by zero');
});

t.test('streams per core are scaled by the received share', async (t) => {
  // 100 streams at 10 % of a core, all received: 1,000 a core.
  t.equal(streamsPerCore(100, 10, 1), 1000);
  // The same CPU for half the bytes is half the streams carried: a dropping receiver is not cheaper.
  t.equal(streamsPerCore(100, 10, 0.5), 500);
  // A receiver that drops half and so spends half the CPU comes out the same as one that does not.
  t.equal(streamsPerCore(100, 5, 0.5), streamsPerCore(100, 10, 1));
  t.equal(streamsPerCore(100, 0, 1), 0, 'no CPU measured: no figure');
});
