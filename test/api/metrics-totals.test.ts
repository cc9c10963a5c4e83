// The totals /metrics reads as counters outlive what counts them: a UDP input's closed and
// reopened sockets (src/native/udp.ts), a stream's recorders (src/dvr/recorder-totals.ts); an
// owner deleted from the config is forgotten once nothing of it is open.
import dgram from 'node:dgram';
import t from 'tap';
import type { StreamRecorder } from '../../src/dvr/recorder.ts';
import { recorderClosed, recorderOpened, recorderTotals } from '../../src/dvr/recorder-totals.ts';
import { UdpReceiver, udpOwnerTotals } from '../../src/native/udp.ts';
import { waitFor } from '../helpers/server.ts';

t.test('a UDP owner counts on over a reopened socket, and is forgotten once deleted', async (t) => {
  const owner = { stream: 'totals-test', input: 1 };
  const sock = dgram.createSocket('udp4');
  t.teardown(() => sock.close());
  const send = (port: number, n: number) =>
    Promise.all(
      Array.from(
        { length: n },
        () =>
          new Promise<void>((r) =>
            sock.send(Buffer.alloc(188, 0x47), port, '127.0.0.1', () => r()),
          ),
      ),
    );
  const mine = (keep = true) =>
    udpOwnerTotals((o) => (o.stream === owner.stream ? keep : true)).find(
      (o) => o.stream === owner.stream,
    );
  const open = () =>
    new UdpReceiver({ port: 0, address: '127.0.0.1', owner, batchLatencyMs: 1, onData() {} });

  const a = open();
  await send(a.port, 2);
  await waitFor('2 datagrams', () => (mine()?.datagrams === 2 ? true : undefined));
  a.close();
  t.equal(mine()?.datagrams, 2, 'a closed socket keeps its count');
  const b = open();
  t.teardown(() => b.close());
  await send(b.port, 1);
  await waitFor('3 datagrams', () => (mine()?.datagrams === 3 ? true : undefined));
  t.equal(mine()?.bytes, 3 * 188, 'the new socket adds to the old');
  t.equal(mine(false), undefined, 'a deleted owner has no series');
  b.close();
  t.equal(mine(false), undefined, 'and is dropped once closed');
  t.equal(mine(), undefined, 'forgotten for good: no open socket, no series');
});

t.test('recorder totals add over recorders of a stream and storage', async (t) => {
  const fake = (id: number, stream: string, bytes: number) =>
    ({
      stream,
      storage: { id },
      stats: { chunks: 1, bytes, dropped: 0, failed: 0, lastWriteAt: 0 },
    }) as unknown as StreamRecorder;
  const keepAll = () => true;
  const row = (stream: string) => recorderTotals(keepAll).find((r) => r.stream === stream);
  const r1 = fake(7, 'totals-rec', 100);
  recorderOpened(r1);
  r1.stats.bytes += 50;
  t.equal(row('totals-rec')?.bytes, 150, 'an open recorder is read live');
  recorderClosed(r1);
  const r2 = fake(7, 'totals-rec', 10);
  recorderOpened(r2);
  t.same(
    { bytes: row('totals-rec')?.bytes, chunks: row('totals-rec')?.chunks },
    { bytes: 160, chunks: 2 },
    'the closed one stays counted',
  );
  recorderClosed(r2);
  recorderClosed(r2);
  t.equal(row('totals-rec')?.bytes, 160, 'closing twice counts once');
  recorderTotals((id) => id !== 7);
  t.equal(row('totals-rec'), undefined, 'a deleted storage is forgotten');
});
