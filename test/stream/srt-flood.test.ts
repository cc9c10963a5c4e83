// A bounded handshake flood at an SRT input listener that has a real caller: 5,000 induction
// handshakes from 50 source ports (what a scanner or a spoofing flood sends: libsrt answers each
// with a cookie and keeps no state), then 200 complete handshakes from real libsrt callers with
// a stream id the input does not expect, in waves of 50. The real caller stays connected and
// its data keeps flowing, every refused caller is counted, and a stream beside it keeps going.
import { randomBytes } from 'node:crypto';
import { createSocket, type Socket } from 'node:dgram';
import t from 'tap';
import type { StreamInstance } from '../../src/drivers/stream/instance.ts';
import { SrtReceiver } from '../../src/native/srt.ts';
import {
  freePort,
  makeFixture,
  makeHost,
  openStream,
  peer,
  playFixture,
  tempDir,
  waitFor,
} from '../helpers/stream-host.ts';

const dir = tempDir(t);
const fixture = makeFixture(dir);
const host = makeHost(dir);

type Status = Record<string, unknown>;
const inputOf = (s: StreamInstance): Status => (s.status()['inputs'] as Status[])[0]!;
const transportOf = (s: StreamInstance): Status => inputOf(s)['transport'] as Status;

const stream = (name: string, spec: Record<string, unknown>): Promise<StreamInstance> =>
  openStream(t, host, { 'stream-name': name, ...spec });

/** An SRT v4 induction handshake (the first packet of every caller): control packet type 0,
 *  then the handshake body with version 4, type 1 (induction), a random socket id. */
function induction(): Buffer {
  const b = Buffer.alloc(16 + 48);
  b.writeUInt32BE(0x80000000, 0); // control, type 0: handshake
  b.writeUInt32BE(0, 4);
  b.writeUInt32BE(Date.now() & 0x7fffffff, 8); // timestamp
  b.writeUInt32BE(0, 12); // destination socket id: none yet
  b.writeUInt32BE(4, 16); // version
  b.writeUInt16BE(0, 20); // encryption
  b.writeUInt16BE(2, 22); // extension field: UDT_DGRAM
  b.writeUInt32BE(randomBytes(4).readUInt32BE() & 0x7fffffff, 24); // initial sequence
  b.writeUInt32BE(1500, 28); // MTU
  b.writeUInt32BE(8192, 32); // flow window
  b.writeUInt32BE(1, 36); // handshake type: induction
  b.writeUInt32BE(randomBytes(4).readUInt32BE() & 0x3fffffff, 40); // socket id
  b.writeUInt32BE(0, 44); // SYN cookie
  b.writeUInt32BE(0x0100007f, 48); // peer address 127.0.0.1
  return b;
}

t.test('a handshake flood beside a connected caller: bounded, counted, harmless', async (t) => {
  const port = await freePort();
  const s = await stream('srt-flooded', {
    input: [
      {
        type: 'srt',
        'listen-mode': true,
        port,
        'srt-client-login': 'venue-a',
        'srt-client-latency-ms': 200,
      },
    ],
  });
  const beside = await stream('beside', { input: [{ type: 'file', 'file-path': fixture }] });
  const udp = await freePort();
  peer(t, 'srt-live-transmit', [
    '-q',
    `udp://127.0.0.1:${udp}`,
    `srt://127.0.0.1:${port}?streamid=venue-a`,
  ]);
  playFixture(t, fixture, 'mpegts', `udp://127.0.0.1:${udp}?pkt_size=1316`);
  await waitFor(() => s.state() === 'running' && beside.state() === 'running', 20_000, 'both run');

  // 5,000 inductions from 50 source ports, in bursts of 500 between turns of the loop.
  const socks: Socket[] = [];
  for (let i = 0; i < 50; i++) {
    const k = createSocket('udp4');
    await new Promise<void>((r) => k.bind(0, '127.0.0.1', () => r()));
    socks.push(k);
  }
  t.teardown(() => {
    for (const k of socks) k.close();
  });
  for (let burst = 0; burst < 10; burst++) {
    for (let i = 0; i < 500; i++) socks[i % 50]!.send(induction(), port, '127.0.0.1');
    await new Promise((r) => setImmediate(r));
  }

  // 200 complete handshakes with a stream id the input does not expect, 50 at a time.
  const refusedBefore = Number((transportOf(s)['srt'] as Status)['rejected']);
  let faults = 0;
  for (let wave = 0; wave < 4; wave++) {
    const callers = Array.from(
      { length: 50 },
      () =>
        new SrtReceiver({
          mode: 'caller',
          address: '127.0.0.1',
          port,
          streamId: `intruder-${wave}`,
          connectTimeoutMs: 3000,
          onData: () => {},
          onEvent: (e) => {
            if (e.type === 'fault') faults++;
          },
        }),
    );
    // Every refused caller hears of it (1401): none is left dialling in silence.
    await waitFor(() => faults >= (wave + 1) * 50, 15_000, `wave ${wave} refused`);
    for (const c of callers) c.close();
  }
  const st = transportOf(s)['srt'] as Status;
  t.equal(Number(st['rejected']) - refusedBefore, 200, 'every refused caller counted');
  t.match(
    transportOf(s)['lastRejection'],
    /stream id "intruder-3" is not the expected one \(1401\)/,
  );

  // The real caller kept its connection and its data flows on; the stream beside runs on.
  t.equal(transportOf(s)['connected'], true, 'the real caller is still connected');
  t.equal(Number(st['accepted']), 1, 'and was never replaced');
  const bytes = Number(transportOf(s)['bytes']);
  const besideBytes = beside.metricsSnapshot().bytesIn;
  await waitFor(() => Number(transportOf(s)['bytes']) > bytes + 50_000, 10_000, 'data goes on');
  await waitFor(
    () => beside.metricsSnapshot().bytesIn > besideBytes,
    10_000,
    'the stream beside goes on',
  );
  t.equal(s.state(), 'running');
  t.equal(beside.state(), 'running', 'the stream beside still runs');
});
