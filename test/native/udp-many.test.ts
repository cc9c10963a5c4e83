// Many UdpReceivers at once on the shared receive thread: each gets its own datagrams only,
// closing half leaves the rest receiving, the thread stops with the last socket, and no socket,
// epoll or eventfd descriptor is left behind (/proc/self).
import dgram from 'node:dgram';
import { readdirSync, readlinkSync } from 'node:fs';
import t from 'tap';
import { UdpReceiver } from '../../src/native/udp.ts';

const COUNT = 50;
const PER_ROUND = 20;
const WAIT_MS = 10_000;
const GROUP = '239.255.43.1';

/** Open descriptors of this process by kind (socket, eventpoll, eventfd). */
interface FdCounts {
  socket: number;
  eventpoll: number;
  eventfd: number;
}

function fds(): FdCounts {
  const out: FdCounts = { socket: 0, eventpoll: 0, eventfd: 0 };
  for (const fd of readdirSync('/proc/self/fd')) {
    let l = '';
    try {
      l = readlinkSync(`/proc/self/fd/${fd}`);
    } catch {
      continue; // closed while we looked
    }
    if (l.startsWith('socket:')) out.socket++;
    else if (l.includes('eventpoll')) out.eventpoll++;
    else if (l.includes('eventfd')) out.eventfd++;
  }
  return out;
}

function threads(): number {
  return readdirSync('/proc/self/task').length;
}

/** A datagram that names its receiver and round: [index, round, 0x47 …]. */
function datagram(index: number, round: number): Buffer {
  const b = Buffer.alloc(188, 0x47);
  b.writeUInt16BE(index, 0);
  b.writeUInt16BE(round, 2);
  return b;
}

/** Resolve when `cond()` holds, checked after each event the receivers raise (bounded). */
interface Poke {
  fn: () => void;
}

function until(cond: () => boolean, what: string, poke: Poke): Promise<void> {
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`timed out: ${what}`)), WAIT_MS);
    poke.fn = () => {
      if (cond()) {
        clearTimeout(timer);
        poke.fn = () => undefined;
        resolve();
      }
    };
    poke.fn();
  });
}

t.test('50 receivers on loopback share one thread; closing half keeps the rest', async (t) => {
  const tx = dgram.createSocket('udp4');
  t.teardown(() => tx.close());
  tx.bind(0, '127.0.0.1');
  await new Promise((resolve) => tx.once('listening', resolve));
  const baseFds = fds();
  const baseThreads = threads();
  const poke: Poke = { fn: () => undefined };
  const got: number[][] = Array.from({ length: COUNT }, () => []); // rounds seen per receiver
  let foreign = 0;
  let afterClose = 0;
  const closed = new Set<number>();
  const rx = Array.from(
    { length: COUNT },
    (_, i) =>
      new UdpReceiver({
        port: 0,
        address: '127.0.0.1',
        batchLatencyMs: 1,
        onData: (batch, n, lengths) => {
          if (closed.has(i)) afterClose++;
          let o = 0;
          for (let k = 0; k < n; k++) {
            if (batch.readUInt16BE(o) !== i) foreign++;
            got[i]!.push(batch.readUInt16BE(o + 2));
            o += lengths[k]!;
          }
          poke.fn();
        },
      }),
  );
  t.teardown(() => {
    for (const r of rx) r.close();
  });
  const during = fds();
  t.equal(during.socket - baseFds.socket, COUNT, 'one socket per receiver');
  t.ok(threads() - baseThreads <= 1, `one receive thread for ${COUNT} sockets`);
  const sendRound = (round: number) => {
    for (let i = 0; i < COUNT; i++) {
      for (let k = 0; k < PER_ROUND; k++) tx.send(datagram(i, round), rx[i]!.port, '127.0.0.1');
    }
  };
  sendRound(1);
  await until(() => got.every((g) => g.length >= PER_ROUND), 'round 1 at every receiver', poke);
  t.equal(foreign, 0, 'each receiver got only its own datagrams');
  t.ok(
    got.every((g) => g.length === PER_ROUND),
    'no datagram lost or duplicated',
  );

  for (let i = 0; i < COUNT; i += 2) {
    rx[i]!.close();
    closed.add(i);
  }
  t.equal(fds().socket - baseFds.socket, COUNT / 2, 'closed sockets are gone');
  sendRound(2);
  await until(
    () => got.every((g, i) => closed.has(i) || g.length >= 2 * PER_ROUND),
    'round 2 at the open receivers',
    poke,
  );
  t.equal(afterClose, 0, 'no onData after close()');
  t.ok(
    got.every((g, i) => (closed.has(i) ? g.length === PER_ROUND : g.length === 2 * PER_ROUND)),
    'open receivers got round 2 whole, closed ones nothing more',
  );
  const stats = rx[1]!.stats();
  t.equal(stats.datagrams, 2 * PER_ROUND);
  t.equal(stats.queueDrops, 0);

  for (const r of rx) r.close();
  t.same(fds(), baseFds, 'no socket, epoll or eventfd left behind');
  t.equal(threads(), baseThreads, 'the receive thread stopped with the last socket');
});

t.test('a receiver opened after the thread stopped starts it again', async (t) => {
  const poke: Poke = { fn: () => undefined };
  let seen = 0;
  const r = new UdpReceiver({
    port: 0,
    address: '127.0.0.1',
    batchLatencyMs: 0,
    onData: (_b, n) => {
      seen += n;
      poke.fn();
    },
  });
  t.teardown(() => r.close());
  const tx = dgram.createSocket('udp4');
  t.teardown(() => tx.close());
  tx.send(datagram(0, 0), r.port, '127.0.0.1');
  await until(() => seen === 1, 'the datagram', poke);
  t.pass('received');
});

t.test('multicast: receivers on many ports of one group, and two sharing a port', async (t) => {
  const ports = 10;
  const poke: Poke = { fn: () => undefined };
  const probe = dgram.createSocket('udp4');
  const base = await new Promise<number>((resolve) =>
    probe.bind(0, '127.0.0.1', () => resolve(probe.address().port)),
  );
  probe.close();
  const counts = new Map<string, number>();
  const wrong: string[] = [];
  const make = (port: number, tag: string) =>
    new UdpReceiver({
      port,
      address: GROUP,
      bindIf: 'lo',
      batchLatencyMs: 1,
      onData: (batch, n, lengths) => {
        let o = 0;
        for (let k = 0; k < n; k++) {
          if (batch.readUInt16BE(o) !== port - base) wrong.push(tag);
          o += lengths[k]!;
        }
        counts.set(tag, (counts.get(tag) ?? 0) + n);
        poke.fn();
      },
    });
  // ports above the probed free one; a clash fails loudly with EADDRINUSE-free multicast binds
  const rx = Array.from({ length: ports }, (_, i) => make(base + i, `p${i}`));
  rx.push(make(base, 'p0-copy'));
  t.teardown(() => {
    for (const r of rx) r.close();
  });
  const tx = dgram.createSocket('udp4');
  t.teardown(() => tx.close());
  await new Promise<void>((resolve) => tx.bind(0, '127.0.0.1', () => resolve()));
  tx.setMulticastInterface('127.0.0.1');
  for (let i = 0; i < ports; i++) {
    for (let k = 0; k < PER_ROUND; k++) tx.send(datagram(i, 0), base + i, GROUP);
  }
  await until(
    () => counts.size === ports + 1 && [...counts.values()].every((c) => c >= PER_ROUND),
    'every port',
    poke,
  );
  t.same(wrong, [], 'each socket saw its own port only');
  t.equal(counts.get('p0-copy'), PER_ROUND, 'a second receiver of a group and port gets a copy');
});

t.test('close() of another receiver from inside onData', async (t) => {
  const poke: Poke = { fn: () => undefined };
  let bSeen = 0;
  let aSeen = 0;
  const b = new UdpReceiver({
    port: 0,
    address: '127.0.0.1',
    batchLatencyMs: 5,
    onData: () => {
      bSeen++;
    },
  });
  const a = new UdpReceiver({
    port: 0,
    address: '127.0.0.1',
    batchLatencyMs: 5,
    onData: () => {
      aSeen++;
      b.close(); // b's batch may be in the same list, after this one: it must not arrive
      poke.fn();
    },
  });
  t.teardown(() => {
    a.close();
    b.close();
  });
  const tx = dgram.createSocket('udp4');
  t.teardown(() => tx.close());
  tx.send(datagram(0, 0), a.port, '127.0.0.1');
  tx.send(datagram(1, 0), b.port, '127.0.0.1');
  await until(() => aSeen > 0, 'a', poke);
  const before = bSeen;
  tx.send(datagram(1, 1), b.port, '127.0.0.1');
  tx.send(datagram(0, 1), a.port, '127.0.0.1');
  await until(() => aSeen > 1, 'a again', poke);
  t.equal(bSeen, before, 'nothing reached b after its close()');
  t.ok(b.closed);
});
