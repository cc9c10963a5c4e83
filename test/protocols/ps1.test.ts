// ps1, the pure parts: every packet's round trip and what decode refuses, the receive window
// (release at timestamp + latency, reorder, NACK and re-NACK after an RTO, give-up, late and
// duplicate packets, drift), the RTT estimator, the send buffer's retransmissions (spacing,
// budget, expiry), and the handshake crypto (cookie, proofs, key check, session cipher).
import t from 'tap';
import {
  CookieJar,
  clientProof,
  equal,
  Ps1Passphrase,
  serverProof,
} from '../../src/protocols/ps1/handshake.ts';
import {
  DataFlag,
  decode,
  encodeAccept,
  encodeAck,
  encodeAckAck,
  encodeAuth,
  encodeBye,
  encodeChallenge,
  encodeData,
  encodeHello,
  encodeKeepalive,
  encodeNack,
  encodeReject,
  MAGIC,
  reasonText,
  toRanges,
} from '../../src/protocols/ps1/packet.ts';
import { ReceiveWindow } from '../../src/protocols/ps1/receive-window.ts';
import { RttEstimator } from '../../src/protocols/ps1/rtt.ts';
import { MIN_BUDGET_BPS, SendBuffer } from '../../src/protocols/ps1/send-buffer.ts';

const nonce = (b: number) => Buffer.alloc(16, b);
const ts = (n: number) => {
  const b = Buffer.alloc(188 * n);
  for (let i = 0; i < n; i++) b[i * 188] = 0x47;
  return b;
};

t.test('packets: round trip of every type', async (t) => {
  const proof = Buffer.alloc(32, 7);
  const cases: [Buffer, Record<string, unknown>][] = [
    [encodeHello(nonce(1), 3), { type: 'hello', version: 1, flags: 3 }],
    [encodeChallenge(nonce(1), nonce(2)), { type: 'challenge' }],
    [
      encodeAuth({
        cnonce: nonce(1),
        snonce: nonce(2),
        flags: 2,
        latencyMs: 3000,
        proof,
        keyCheck: Buffer.alloc(16, 9),
        login: 'édge',
      }),
      { type: 'auth', flags: 2, latencyMs: 3000, login: 'édge' },
    ],
    [
      encodeAccept(0xdeadbeef, nonce(1), proof, 4000),
      { type: 'accept', session: 0xdeadbeef, bufferMs: 4000 },
    ],
    [encodeReject(nonce(1), 5), { type: 'reject', reason: 5 }],
    [
      encodeData(42, 0xfffffffe, 123456, DataFlag.encrypted, ts(7)),
      { type: 'data', session: 42, seq: 0xfffffffe, timestamp: 123456, flags: 2 },
    ],
    [
      encodeNack(42, [
        { first: 10, count: 3 },
        { first: 20, count: 1 },
      ]),
      {
        type: 'nack',
        ranges: [
          { first: 10, count: 3 },
          { first: 20, count: 1 },
        ],
      },
    ],
    [
      encodeAck(42, 99, 0xabcdef01, 40_000, 3, 17),
      { type: 'ack', ackSeq: 99, echo: 0xabcdef01, rttUs: 40_000, lost: 3, recovered: 17 },
    ],
    [encodeAckAck(42, 77), { type: 'ackack', session: 42, echo: 77 }],
    [encodeKeepalive(42), { type: 'keepalive', session: 42 }],
    [encodeBye(42, 9), { type: 'bye', session: 42, reason: 9 }],
  ];
  for (const [bytes, want] of cases) {
    t.equal(bytes.readUInt16BE(0), MAGIC);
    t.match(decode(bytes), want, String(want['type']));
  }
  const auth = decode(cases[2]![0]);
  t.ok(auth?.type === 'auth' && equal(auth.proof, proof), 'proof bytes');
  const data = decode(cases[5]![0]);
  t.equal(data?.type === 'data' ? data.payload.length : 0, 7 * 188, 'payload');
  t.equal(encodeHello(nonce(1), 0).length, 64, 'HELLO padded: never shorter than CHALLENGE');
  t.ok(encodeChallenge(nonce(1), nonce(2)).length <= 64);
});

t.test('packets: decode refuses what is not ps1', async (t) => {
  const data = encodeData(1, 1, 1, 0, ts(7));
  const bad: [string, Buffer][] = [
    ['empty', Buffer.alloc(0)],
    ['random', Buffer.from('not a ps1 packet at all, just bytes')],
    ['short header', data.subarray(0, 7)],
    ['DATA not whole TS packets', data.subarray(0, 20 + 100)],
    ['DATA with no payload', data.subarray(0, 20)],
    ['DATA oversized', Buffer.concat([data, ts(1)])],
    ['short HELLO', encodeHello(nonce(1), 0).subarray(0, 40)],
    [
      'truncated AUTH login',
      encodeAuth({
        cnonce: nonce(1),
        snonce: nonce(2),
        flags: 0,
        latencyMs: 1,
        proof: nonce(3),
        keyCheck: nonce(4),
        login: 'abc',
      }).subarray(0, 93),
    ],
    ['NACK of 0 ranges', Buffer.from(encodeNack(1, [{ first: 1, count: 1 }]).fill(0, 8, 10))],
    ['unknown type', Buffer.from([0x50, 0x31, 1, 0x77, 0, 0, 0, 1, 0, 0, 0, 0])],
  ];
  for (const [name, b] of bad) t.equal(decode(b), null, name);
  const v2 = encodeData(1, 1, 1, 0, ts(1));
  v2[2] = 2;
  t.equal(decode(v2), null, 'DATA of another version');
  const hello2 = encodeHello(nonce(1), 0);
  hello2[2] = 2;
  t.match(
    decode(hello2),
    { type: 'hello', version: 2 },
    'a HELLO of any version is read (to refuse it)',
  );
  t.same(toRanges([1, 2, 3, 7, 9, 10]), [
    { first: 1, count: 3 },
    { first: 7, count: 1 },
    { first: 9, count: 2 },
  ]);
  t.match(reasonText(2), /login or password refused/);
});

t.test('window: in-order release at timestamp + latency', async (t) => {
  const w = new ReceiveWindow(100, new RttEstimator(40));
  w.push(0, 1000, Buffer.from('a'), 5000, false);
  w.push(1, 1010, Buffer.from('b'), 5010, false);
  t.same(w.release(5099), [], 'nothing before latency');
  t.same(w.release(5100).map(String), ['a']);
  t.same(w.release(5109).map(String), []);
  t.same(w.release(5110).map(String), ['b']);
  t.equal(w.ackSeq, 2);
});

t.test('window: reorder, NACK at once, again after RTO, recovered', async (t) => {
  const rtt = new RttEstimator(40); // rto = 40 + 4 × 20 = 120
  const w = new ReceiveWindow(500, rtt);
  w.push(0, 0, Buffer.from('0'), 0, false);
  w.push(3, 3, Buffer.from('3'), 3, false);
  t.same(w.nacks(3), [1, 2], 'the gap is NACKed at once');
  t.same(w.nacks(50), [], 'not again before the RTO');
  w.push(2, 2, Buffer.from('2'), 60, false); // reordered: arrived late by itself
  t.same(w.nacks(123), [1], 'again after the RTO, only what is still missing');
  w.push(1, 1, Buffer.from('1'), 130, true);
  t.same(w.release(600).map(String), ['0', '1', '2', '3'], 'released in order');
  t.equal(w.counters.recovered, 2);
  t.equal(w.counters.retransmittedReceived, 1);
  t.equal(w.counters.lost, 0);
  t.equal(w.counters.nackedPackets, 3);
});

t.test('window: a re-NACK comes at least four times within the latency', async (t) => {
  const w = new ReceiveWindow(200, new RttEstimator(300)); // RTO 900 ms > latency
  w.push(0, 0, Buffer.from('0'), 0, false);
  w.push(2, 2, Buffer.from('2'), 0, false);
  t.same(w.nacks(0), [1]);
  t.same(w.nacks(49), []);
  t.same(w.nacks(50), [1], 'after latency / 4, not the RTO');
});

t.test('window: give up when the packet after the gap is due; late after that', async (t) => {
  const w = new ReceiveWindow(200, new RttEstimator(40));
  w.push(0, 0, Buffer.from('0'), 0, false);
  w.push(4, 40, Buffer.from('4'), 40, false);
  t.same(w.release(200).map(String), ['0']);
  t.same(w.release(239).map(String), [], 'the gap waits while 4 is not due');
  t.same(w.release(240).map(String), ['4'], 'given up at 4’s release time');
  t.equal(w.counters.lost, 3);
  t.equal(w.missingCount, 0, 'no NACK for a given-up packet');
  t.same(w.nacks(1000), []);
  t.equal(w.push(2, 20, Buffer.from('2'), 250, true), 'late');
  t.equal(w.counters.late, 1);
  w.push(5, 50, Buffer.from('5'), 50, false);
  t.equal(w.push(5, 50, Buffer.from('5'), 51, true), 'duplicate');
  t.equal(w.push(5 + 70_000, 50, Buffer.from('x'), 51, false), 'outOfWindow');
});

t.test('window: timestamps wrap; drift is followed', async (t) => {
  const w = new ReceiveWindow(100, new RttEstimator(40));
  const start = 0xffffff00;
  w.push(0, start, Buffer.from('a'), 0, false);
  w.push(1, (start + 0x200) >>> 0, Buffer.from('b'), 0x200, false);
  t.same(w.release(100).map(String), ['a']);
  t.same(w.release(0x200 + 99).map(String), []);
  t.same(w.release(0x200 + 100).map(String), ['b'], 'released 0x200 ms later across the wrap');
  // The receiver's clock gains: transit shrinks by 1 ms per second; after a drift window the
  // release time follows part of the way.
  const d = new ReceiveWindow(100, new RttEstimator(40));
  for (let i = 0; i <= 20; i++) d.push(i, i * 1000, Buffer.from([i]), i * 1000 - i, false);
  // After the first 10 s the smallest transit (−11 ms) moves base an eighth of the way.
  t.equal(d.release(20_098).length, 20);
  t.equal(d.release(20_099).length, 1, 'packet 20 due at 20 100 − 11/8 ms, not 20 100');
});

t.test('RTT estimator', async (t) => {
  const r = new RttEstimator(300);
  t.equal(r.rttMs, 300, 'the configured start');
  t.equal(r.rtoMs, 900);
  r.sample(40);
  t.equal(r.rttMs, 40, 'the first sample replaces it');
  t.equal(r.varMs, 20);
  r.sample(48);
  t.equal(r.rttMs, 41);
  t.equal(r.varMs, 17);
  for (let i = 0; i < 100; i++) r.sample(0.1);
  t.equal(r.rtoMs, 10, 'floor');
  r.sample(-1);
  r.sample(Number.NaN);
  t.equal(r.samples, 102, 'nonsense ignored');
});

t.test('send buffer: retransmit what is held, spaced, within the budget', async (t) => {
  const b = new SendBuffer(1000, 25, 0);
  const dg = (seq: number) => encodeData(1, seq, seq, 0, ts(7));
  for (let i = 0; i < 10; i++) b.add(i, dg(i), i);
  const r1 = b.retransmit([{ first: 3, count: 2 }], 20, 40);
  t.equal(r1.length, 2);
  t.equal(
    decode(r1[0]!)?.type === 'data' && (decode(r1[0]!) as { flags: number }).flags & 1,
    1,
    'flagged',
  );
  t.same(b.retransmit([{ first: 3, count: 1 }], 30, 40), [], 'not twice within half an RTT');
  t.equal(b.retransmit([{ first: 3, count: 1 }], 41, 40).length, 1, 'again after it');
  t.same(b.retransmit([{ first: 50, count: 60000 }], 42, 40), [], 'not held');
  t.equal(b.counters.expired, 60000);
  b.trim(1100);
  t.equal(b.size, 0, 'aged out');
  t.same(b.retransmit([{ first: 5, count: 1 }], 1100, 40), [], 'expired');
  // Budget: at the floor rate (64 kB/s, 32 kB burst) 1336-byte datagrams run out.
  const c = new SendBuffer(10_000, 25, 0);
  for (let i = 0; i < 100; i++) c.add(i, dg(i), 0);
  const got = c.retransmit([{ first: 0, count: 100 }], 0, 40).length;
  t.equal(got, Math.floor((MIN_BUDGET_BPS * 0.5) / 1336), 'the burst');
  t.equal(c.counters.capped, 100 - got);
  t.equal(c.retransmit([{ first: 99, count: 1 }], 100, 40).length, 1, 'refilled with time');
});

t.test('handshake: cookie bound to address, port, cnonce and time', async (t) => {
  const jar = new CookieJar();
  const s = jar.snonce('127.0.0.1', 5000, nonce(1), 1000);
  t.ok(jar.check('127.0.0.1', 5000, nonce(1), s, 1000));
  t.ok(jar.check('127.0.0.1', 5000, nonce(1), s, 19_999), 'the next bucket');
  t.notOk(jar.check('127.0.0.1', 5000, nonce(1), s, 20_000), 'expired');
  t.notOk(jar.check('127.0.0.2', 5000, nonce(1), s, 1000), 'another address');
  t.notOk(jar.check('127.0.0.1', 5001, nonce(1), s, 1000), 'another port');
  t.notOk(jar.check('127.0.0.1', 5000, nonce(2), s, 1000), 'another cnonce');
  t.notOk(new CookieJar().check('127.0.0.1', 5000, nonce(1), s, 1000), 'another server run');
});

t.test('handshake: proofs and the passphrase', async (t) => {
  const p = clientProof('secret', nonce(2), nonce(1), 'edge');
  t.equal(p.length, 32);
  t.ok(equal(p, clientProof('secret', nonce(2), nonce(1), 'edge')));
  t.notOk(equal(p, clientProof('Secret', nonce(2), nonce(1), 'edge')), 'password');
  t.notOk(equal(p, clientProof('secret', nonce(3), nonce(1), 'edge')), 'server nonce');
  t.notOk(equal(p, clientProof('secret', nonce(2), nonce(1), 'edgf')), 'login');
  t.notOk(equal(p, serverProof('secret', nonce(1), nonce(2), 1, 'edge')), 'server proof differs');
  t.notOk(p.toString('latin1').includes('secret'));
  const a = new Ps1Passphrase('a long shared secret');
  const b = new Ps1Passphrase('a long shared secret');
  const c = new Ps1Passphrase('another shared secret');
  t.ok(equal(a.keyCheck(nonce(2), nonce(1)), b.keyCheck(nonce(2), nonce(1))));
  t.notOk(equal(a.keyCheck(nonce(2), nonce(1)), c.keyCheck(nonce(2), nonce(1))));
  const plain = ts(7);
  const enc = a.session(nonce(2), nonce(1), 7).apply(5, plain);
  t.notSame(enc, plain);
  t.same(b.session(nonce(2), nonce(1), 7).apply(5, enc), plain, 'decrypts');
  t.notSame(a.session(nonce(2), nonce(1), 7).apply(6, plain), enc, 'another sequence number');
  t.notSame(a.session(nonce(3), nonce(1), 7).apply(5, plain), enc, 'another session key');
  t.throws(() => new Ps1Passphrase('short'), /10 to 64/);
});
