// SO_RCVLOWAT on a socket Node owns (native/net/socket_opts.cc, src/native/socket.ts): bytes
// under the mark are not handed to the reader; reaching it, or lowering the mark, hands them
// over at once. Loopback only; the order of events is forced by a second connection's echo,
// never by a sleep.
import net from 'node:net';
import t, { type Test } from 'tap';
import { NativeError } from '../../src/native/index.ts';
import {
  MAX_RECV_LOW_WATER,
  recvLowWater,
  setRecvLowWater,
  socketFd,
} from '../../src/native/socket.ts';

/** A connected pair on loopback: [the side we read, the side we write]. */
async function pair(t: Test): Promise<[net.Socket, net.Socket]> {
  const server = net.createServer();
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  const port = (server.address() as net.AddressInfo).port;
  const accepted = new Promise<net.Socket>((r) => server.once('connection', r));
  const client = net.connect(port, '127.0.0.1');
  await new Promise<void>((r) => client.once('connect', r));
  const peer = await accepted;
  server.close();
  t.teardown(() => {
    client.destroy();
    peer.destroy();
  });
  return [client, peer];
}

/** Resolves once the event loop has polled after everything written so far to `reader`'s peer
 *  was queued: a byte sent round trip over a second connection. */
async function loopPassed(t: Test): Promise<void> {
  const [a, b] = await pair(t);
  b.on('data', (d) => b.write(d));
  await new Promise<void>((r) => {
    a.once('data', () => r());
    a.write('x');
  });
}

t.test('bytes under the mark wait; reaching it hands them over in one read', async (t) => {
  const [reader, writer] = await pair(t);
  const fd = socketFd(reader);
  t.ok(fd >= 0, 'a connected TCP socket has an fd');
  setRecvLowWater(fd, 1000);
  t.equal(recvLowWater(fd), 1000, 'the kernel holds the mark');
  const reads: number[] = [];
  reader.on('data', (d: Buffer) => reads.push(d.length));
  writer.write(Buffer.alloc(100));
  await loopPassed(t);
  t.same(reads, [], '100 bytes under a mark of 1000: not read');
  const got = new Promise<void>((r) => reader.once('data', () => r()));
  writer.write(Buffer.alloc(900));
  await got;
  t.same(reads, [1000], 'read once the mark is met, all together');
});

t.test('lowering the mark hands over what is queued at once', async (t) => {
  const [reader, writer] = await pair(t);
  const fd = socketFd(reader);
  setRecvLowWater(fd, 4096);
  const reads: number[] = [];
  reader.on('data', (d: Buffer) => reads.push(d.length));
  writer.write(Buffer.alloc(300));
  await loopPassed(t);
  t.same(reads, [], 'held');
  const got = new Promise<void>((r) => reader.once('data', () => r()));
  setRecvLowWater(fd, 1);
  await got;
  t.same(reads, [300], 'released without more bytes');
});

t.test('argument checks and a closed socket', async (t) => {
  t.throws(() => setRecvLowWater(-1, 10), { code: 'ERR_NATIVE_ARG' });
  t.throws(() => setRecvLowWater(3, 0), { code: 'ERR_NATIVE_ARG' });
  t.throws(() => setRecvLowWater(3, MAX_RECV_LOW_WATER + 1), { code: 'ERR_NATIVE_ARG' });
  const [reader] = await pair(t);
  reader.destroy();
  t.equal(socketFd(reader), -1, 'no fd once destroyed');
  const err = (() => {
    try {
      // An fd number no socket holds.
      setRecvLowWater(1 << 20, 10);
    } catch (e) {
      return e;
    }
  })();
  t.type(err, NativeError);
  t.match(err, { code: 'EBADF', syscall: 'setsockopt' });
});
