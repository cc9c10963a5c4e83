// ps1 faults: the client's start and play time-outs against scripted servers (silent; accepts
// but sends nothing; sends then stops), each reported in words and followed by a new attempt;
// and bad input at both ends of a live link — random bytes, oversized datagrams, forged and
// replayed packets from another address, a HELLO flood — counted, without harm to the link.
import { randomBytes } from 'node:crypto';
import { createSocket, type Socket } from 'node:dgram';
import t, { type Test } from 'tap';
import { StreamDriver } from '../../src/drivers/stream/driver.ts';
import type { StreamInstance } from '../../src/drivers/stream/instance.ts';
import { PS1_ANSWERS_PER_S } from '../../src/outputs/ps1/output.ts';
import { clientProof, serverProof } from '../../src/protocols/ps1/handshake.ts';
import {
  decode,
  encodeAccept,
  encodeAck,
  encodeAuth,
  encodeBye,
  encodeChallenge,
  encodeData,
  encodeHello,
  encodeKeepalive,
  encodeNack,
  type Packet,
} from '../../src/protocols/ps1/packet.ts';
import { ccErrors, input0, makeFecFixture, transport, udpPort } from '../helpers/prompeg.ts';
import { makeHost, streamResource, tempDir, waitFor } from '../helpers/stream-host.ts';

type Status = Record<string, unknown>;
/** HELLOs sent at once: well within what the server's socket buffer holds unread (about 250). */
const FLOOD_BURST = 100;
/** HELLOs sent at most: the flood ends once the server drops some (past its cap of answers). */
const FLOOD_MAX = 20_000;
/** A burst not read by then is lost (the socket buffer overflowed). */
const FLOOD_READ_MS = 5000;
const dir = tempDir(t);
const host = makeHost(dir);
const driver = new StreamDriver();
const out0 = (s: StreamInstance): Status => (s.status()['outputs'] as Status[])[0]!;

async function stream(t: Test, name: string, spec: Status): Promise<StreamInstance> {
  const inst = (await driver.create(
    streamResource({ 'stream-name': name, ...spec }),
    host,
  )) as StreamInstance;
  t.teardown(() => inst.close());
  return inst;
}

/** Loop turns (each an I/O phase) until `done`, for at most `ms`: whether it came true. */
async function turnsUntil(done: () => boolean, ms: number): Promise<boolean> {
  const end = Date.now() + ms;
  while (!done()) {
    if (Date.now() > end) return false;
    await new Promise(setImmediate);
  }
  return true;
}

async function socket(t: Test, port = 0): Promise<Socket> {
  const s = createSocket('udp4');
  await new Promise<void>((resolve) => s.bind(port, '127.0.0.1', () => resolve()));
  t.teardown(() => s.close());
  return s;
}

/** 7 null TS packets: valid DATA payload. */
const NULLS = Buffer.concat(
  Array.from({ length: 7 }, () =>
    Buffer.concat([Buffer.from([0x47, 0x1f, 0xff, 0x10]), Buffer.alloc(184, 0xff)]),
  ),
);

type Script = 'silent' | 'no-data' | 'data-then-stop';

/** A scripted ps1 server (open: empty login and password) on a free port. */
async function scripted(t: Test, script: Script) {
  const sock = await socket(t);
  const seen = { hellos: 0, byes: 0 };
  const timers = new Set<NodeJS.Timeout>();
  t.teardown(() => {
    for (const x of timers) clearInterval(x);
  });
  sock.on('message', (msg, r) => {
    const p = decode(msg) as Packet | null;
    if (!p || script === 'silent') return;
    if (p.type === 'hello') {
      seen.hellos++;
      sock.send(encodeChallenge(p.cnonce, Buffer.alloc(16, 5)), r.port, r.address);
    } else if (p.type === 'auth') {
      const id = 0x1234 + seen.hellos;
      const proof = serverProof('', p.cnonce, p.snonce, id, p.login);
      sock.send(encodeAccept(id, p.cnonce, proof, 1000), r.port, r.address);
      if (script === 'data-then-stop') {
        let seq = 0;
        const begun = Date.now();
        const x = setInterval(() => {
          const ms = Date.now() - begun;
          const d = ms < 1000 ? encodeData(id, seq++, ms, 0, NULLS) : encodeKeepalive(id); // then silence but for keep-alives
          sock.send(d, r.port, r.address);
        }, 20);
        timers.add(x);
      }
    } else if (p.type === 'bye') seen.byes++;
  });
  return { port: sock.address().port, seen };
}

t.test('start and play time-outs: the reason in words, then a new attempt', async (t) => {
  const silent = await scripted(t, 'silent');
  const noData = await scripted(t, 'no-data');
  const stops = await scripted(t, 'data-then-stop');
  const input = (port: number) => ({
    input: [
      {
        type: 'ps1',
        address: '127.0.0.1',
        port,
        'ps1-client-start-timeout': 5,
        'ps1-client-play-timeout': 5,
        'ps1-client-latency-ms': 250,
      },
    ],
  });
  const a = await stream(t, 'ps1-silent', input(silent.port));
  const b = await stream(t, 'ps1-no-data', input(noData.port));
  const c = await stream(t, 'ps1-stops', input(stops.port));
  const started = Date.now();
  await waitFor(() => Number(transport(c)['received']) > 10, 5000, 'data from the third');
  await waitFor(
    () => input0(a)['message'] && input0(b)['message'] && input0(c)['message'],
    12_000,
    'three faults',
  );
  t.ok(Date.now() - started >= 4500, 'not before the time-out');
  t.equal(input0(a)['message'], 'no answer from the server within 5 s (ps1-client-start-timeout)');
  t.equal(input0(b)['message'], 'accepted, but no data within 5 s (ps1-client-start-timeout)');
  t.equal(input0(c)['message'], 'no data for 5 s (ps1-client-play-timeout)');
  await waitFor(() => Number(transport(a)['attempts']) >= 2, 3000, 'a dials again');
  await waitFor(() => noData.seen.hellos >= 2, 3000, 'b dials again');
  await waitFor(() => stops.seen.hellos >= 2, 3000, 'c dials again');
  t.ok(stops.seen.byes >= 1, 'the play time-out says BYE');
  // The new HELLO is seen before the handshake ends: wait for the acceptance itself.
  await waitFor(() => Number(transport(c)['connects']) >= 2, 3000, 'c accepted again');
  t.equal(transport(c)['connects'], 2, 'and is accepted again');
});

t.test('bad input at both ends of a live link: counted, the link unharmed', async (t) => {
  const fixture = makeFecFixture(dir, 10);
  const port = await udpPort();
  const tx = await stream(t, 'ps1-junk-origin', {
    input: [{ type: 'file', 'file-path': fixture }],
    output: [{ type: 'ps1', port }],
  });
  await waitFor(() => tx.state() === 'running', 15_000, 'origin running');
  const rx = await stream(t, 'ps1-junk-edge', {
    input: [{ type: 'ps1', address: '127.0.0.1', port, 'ps1-client-latency-ms': 250 }],
  });
  await waitFor(() => rx.state() === 'running', 15_000, 'edge running');
  const session = parseInt(String((out0(tx)['sessions'] as Status[])[0]!['session']), 16);
  const clientPort = Number(transport(rx)['localPort']);
  const stranger = await socket(t);
  const send = (d: Buffer, to: number) => stranger.send(d, to, '127.0.0.1');

  for (let i = 0; i < 200; i++) send(randomBytes(1 + (i % 1400)), port);
  for (let i = 0; i < 20; i++) {
    send(randomBytes(9000), port);
    // fixed wait: paces the junk sender, one at a time (the socket buffer holds few)
    await new Promise((r) => setTimeout(r, 5));
  }
  // Forged packets of the live session from another address: NACK storms, fake ACKs, a BYE.
  send(encodeNack(session, [{ first: 0, count: 65535 }]), port);
  send(encodeAck(session, 0, 0, 1, 999, 999), port);
  send(encodeBye(session, 0), port);
  // …and at the client: forged DATA, a forged BYE, random bytes, an oversized datagram.
  send(encodeData(parseInt(String(transport(rx)['session']), 16), 1e6, 0, 0, NULLS), clientPort);
  send(encodeBye(parseInt(String(transport(rx)['session']), 16), 9), clientPort);
  for (let i = 0; i < 50; i++) send(randomBytes(100), clientPort);
  send(randomBytes(9000), clientPort);

  // A handshake of our own, then its AUTH replayed from another address.
  const own = await socket(t);
  const cnonce = randomBytes(16);
  const answer = (s: Socket) =>
    new Promise<Packet>((resolve) => s.once('message', (m) => resolve(decode(m)!)));
  let got = answer(own);
  own.send(encodeHello(cnonce, 0), port, '127.0.0.1');
  const ch = (await got) as Extract<Packet, { type: 'challenge' }>;
  const auth = encodeAuth({
    cnonce,
    snonce: ch.snonce,
    flags: 0,
    latencyMs: 250,
    proof: clientProof('', ch.snonce, cnonce, 'x'),
    keyCheck: Buffer.alloc(16),
    login: 'x',
  });
  const replayer = await socket(t);
  got = answer(replayer);
  replayer.send(auth, port, '127.0.0.1');
  t.match(await got, { type: 'reject', reason: 8 }, 'a replayed AUTH from elsewhere: refused');
  got = answer(own);
  own.send(auth, port, '127.0.0.1');
  t.match(await got, { type: 'accept' }, 'from its own address it is admitted');

  // A HELLO flood from 20 ports: answered up to the cap, no state kept. Each burst goes once
  // the server has read the one before, so none is lost in its socket buffer and the flood comes
  // as fast as the server takes it, however loaded the machine (paced by the test's own timers,
  // it fell under the cap there); it goes on until the server drops HELLOs.
  // One HELLO sent over and over: the server keeps nothing of it, and the flood costs this
  // process (the server's too) no more than it must.
  const hello = encodeHello(randomBytes(16), 0);
  const flooders = await Promise.all(Array.from({ length: 20 }, () => socket(t)));
  const hellos = () => Number(out0(tx)['hellos']);
  const hellosBefore = hellos();
  const floodBegan = Date.now();
  let flooded = 0;
  let read = true;
  while (read && Number(out0(tx)['helloDropped']) === 0 && flooded < FLOOD_MAX) {
    for (let i = 0; i < FLOOD_BURST; i++, flooded++)
      flooders[flooded % 20]!.send(hello, port, '127.0.0.1');
    read = await turnsUntil(() => hellos() >= hellosBefore + flooded, FLOOD_READ_MS);
  }
  const floodSeconds = Math.ceil((Date.now() - floodBegan) / 1000);

  const o = out0(tx);
  const tr = transport(rx);
  t.comment(JSON.stringify(o));
  t.comment(JSON.stringify(tr));
  t.ok(Number(o['junk']) >= 150, `junk counted at the server (${o['junk']})`);
  t.ok(Number(o['oversized']) >= 15, `oversized counted (${o['oversized']} of 20 sent)`);
  t.equal(o['foreignPeer'], 3, 'forged session packets from another address dropped');
  t.equal(o['badCookie'], 1, 'the replayed AUTH');
  t.ok(Number(o['helloDropped']) > 0, `HELLOs beyond the cap dropped (${o['helloDropped']})`);
  t.equal(hellos() - hellosBefore, flooded, `every HELLO of the flood read (${flooded})`);
  t.ok(
    Number(o['challenges']) <= PS1_ANSWERS_PER_S * (floodSeconds + 1),
    `challenges bounded: ${o['challenges']} in ${floodSeconds} s of flood`,
  );
  t.equal((o['sessions'] as Status[]).length, 2, 'sessions: the edge and our own, nothing more');
  t.ok(Number(tr['foreign']) >= 50, `foreign datagrams at the client (${tr['foreign']})`);
  t.equal(tr['state'], 'playing', 'the edge still plays');
  t.equal(tr['connects'], 1, 'on its first session');
  const before = Number(tr['received']);
  await waitFor(() => Number(transport(rx)['received']) > before + 100, 5000, 'data flows on');
  t.equal(ccErrors(rx), 0, '0 CC errors');
});
