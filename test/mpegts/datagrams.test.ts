// DatagramCutter: whole datagrams of N packets out of batches of any size, the tail kept.
import t from 'tap';
import { DatagramCutter } from '../../src/mpegts/datagrams.ts';
import { TS_PACKET_SIZE } from '../../src/mpegts/packet.ts';

const packets = (n: number, from: number) =>
  Buffer.concat(
    Array.from({ length: n }, (_, i) => Buffer.alloc(TS_PACKET_SIZE, (from + i) & 0xff)),
  );

t.test('batches of 10, then 4: two datagrams of 7, the third packet-run waits', async (t) => {
  const c = new DatagramCutter(7);
  const out: number[][] = [];
  const emit = (d: Buffer) =>
    out.push(Array.from({ length: d.length / TS_PACKET_SIZE }, (_, i) => d[i * TS_PACKET_SIZE]!));
  c.push(packets(10, 0), emit);
  t.same(out, [[0, 1, 2, 3, 4, 5, 6]], 'one whole datagram, three packets wait');
  c.push(packets(4, 10), emit);
  t.same(out[1], [7, 8, 9, 10, 11, 12, 13], 'the tail completed by the next batch, in order');
  c.push(packets(6, 14), emit);
  t.equal(out.length, 2, 'six packets are not a datagram');
  c.push(packets(1, 20), emit);
  t.same(out[2], [14, 15, 16, 17, 18, 19, 20]);
});

t.test('one packet per datagram: every packet goes out at once', async (t) => {
  const c = new DatagramCutter(1);
  let n = 0;
  c.push(packets(5, 0), () => n++);
  t.equal(n, 5);
});
