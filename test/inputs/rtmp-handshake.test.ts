// The RTMP handshake put together from several reads of a reused buffer (the socket's `onread`
// buffer, valid during one feed() only): the bytes of an earlier read must be kept as they were,
// or a later read overwrites S0 ("not an RTMP peer (handshake version 32)").
import { EventEmitter } from 'node:events';
import type { Socket } from 'node:net';
import t from 'tap';
import { RtmpConnection } from '../../src/inputs/rtmp/connection.ts';
import { HANDSHAKE_SIZE, handshakeHello, RTMP_VERSION } from '../../src/protocols/rtmp/chunk.ts';

/** A socket that records what is written and never closes by itself. */
function fakeSocket(): Socket & { written: Buffer[] } {
  const s = new EventEmitter() as unknown as Socket & { written: Buffer[] };
  s.written = [];
  Object.assign(s, {
    write: (b: Buffer) => {
      s.written.push(Buffer.from(b));
      return true;
    },
    destroy: () => s,
    end: () => s,
    destroyed: false,
  });
  return s;
}

t.test('a client handshake split over reads of one reused buffer', async (t) => {
  const socket = fakeSocket();
  let ready = false;
  let closed: Error | null | undefined;
  const conn = new RtmpConnection(
    socket,
    'client',
    {
      onReady: () => {
        ready = true;
      },
      onCommand: () => {},
      onData: () => {},
      onMedia: () => {},
      onClose: (err) => {
        closed = err;
      },
    },
    { ownReads: true },
  );
  // S0 S1 S2 from the server, fed in 100-byte reads through one reused buffer.
  const s0s1 = handshakeHello(0, (n) => Buffer.alloc(n, 7));
  const s2 = Buffer.alloc(HANDSHAKE_SIZE, 9);
  const all = Buffer.concat([s0s1, s2]);
  t.equal(all[0], RTMP_VERSION);
  const reused = Buffer.alloc(100);
  for (let at = 0; at < all.length; at += 100) {
    const n = Math.min(100, all.length - at);
    all.copy(reused, 0, at, at + n);
    conn.feed(reused.subarray(0, n));
    reused.fill(0x20); // the reader's buffer gets the next read's bytes
  }
  t.equal(closed, undefined, `no protocol error (${closed?.message ?? 'none'})`);
  t.ok(ready, 'the connection is open');
});
