// RIST over a lossy path: the test relay (test/helpers/lossy-relay.ts) between the sender and the
// stream drops and reorders datagrams in both directions (NACKs too). At 5 % loss the stream's
// input counts 0 CC errors with librist's retransmissions in the status and on /metrics; at 20 %
// the input stays up and reports the loss; two peers duplicated over two lossy paths.
// SLUICE_RIST_LOSSY_SECONDS sets the length of the 5 % run (default 20 s; the 60 s run
// passed too, docs/transports.md).
import t from 'tap';
import { lossyRelay } from '../helpers/lossy-relay.ts';
import { ccErrors, input0, ristHarness, transport } from '../helpers/rist.ts';
import { freePort, waitFor } from '../helpers/stream-host.ts';

const { registry, stream, ffmpegRist, ristsender } = await ristHarness(t);

t.test(
  '5 % loss and reordering, recovered: 0 CC errors, retransmissions in the stats',
  async (t) => {
    const port = await freePort();
    const relay = await lossyRelay(t, {
      targetPort: port,
      loss: 0.05,
      reorder: 0.02,
      reorderMs: 4,
      delayMs: 5,
      seed: 16,
    });
    ffmpegRist(t, `rist://127.0.0.1:${relay.port}`, ['-buffer_size', '1000']);
    const s = await stream(t, 'rist-lossy', {
      'rist-addr-port': [port],
      'rist-addr-intf': ['127.0.0.1'],
    });
    const seconds = Number(process.env['SLUICE_RIST_LOSSY_SECONDS'] ?? 20);
    const start = Date.now();
    await waitFor(() => Date.now() - start >= seconds * 1000, seconds * 1000 + 5000, 'the run');
    const tr = transport(s);
    t.comment(
      `relay: ${JSON.stringify(relay.stats)}; rist: received ${tr['received']} missing ${tr['missing']} recovered ${tr['recovered']} lost ${tr['lost']} rtt ${tr['rttMs']} ms`,
    );
    t.ok(relay.stats.droppedForward > 2 * seconds, 'the relay dropped data packets');
    t.ok(Number(tr['recovered']) > 0, 'librist recovered packets by retransmission');
    t.equal(Number(tr['lost']), 0, 'nothing lost for good');
    t.equal(ccErrors(s), 0, '0 CC errors at the stream input');
    t.equal(s.state(), 'running');
    const text = await registry.metrics();
    const recovered = text.match(
      /sluice_stream_input_transport_packets_total\{stream="rist-lossy",protocol="rist",kind="recovered"\} (\d+)/,
    );
    t.ok(Number(recovered?.[1]) > 0, `/metrics shows the recovered packets (${recovered?.[1]})`);
    t.match(
      text,
      /sluice_stream_input_transport_rtt_seconds\{stream="rist-lossy",protocol="rist"\} 0\.\d+/,
    );
  },
);

t.test('20 % loss: the input stays up and reports the loss', async (t) => {
  const port = await freePort();
  const relay = await lossyRelay(t, { targetPort: port, loss: 0.2, seed: 20 });
  ffmpegRist(t, `rist://127.0.0.1:${relay.port}`, ['-buffer_size', '1000']);
  const s = await stream(t, 'rist-lossy20', {
    'rist-addr-port': [port],
    'rist-addr-intf': ['127.0.0.1'],
  });
  await waitFor(() => Number(transport(s)['missing']) > 20, 15_000, 'loss reported');
  const tr = transport(s);
  t.comment(
    `relay: ${JSON.stringify(relay.stats)}; rist: missing ${tr['missing']} recovered ${tr['recovered']} lost ${tr['lost']} quality ${tr['quality']}`,
  );
  t.equal(s.state(), 'running', 'still running');
  t.equal(input0(s)['state'], 'receiving', 'the input still receives');
  t.ok(Number(tr['quality']) < 100, 'quality below 100 %');
});

t.test(
  'two peers (rist-addr-* arrays), duplicated by the sender over two lossy paths',
  async (t) => {
    const [p1, p2] = [await freePort(), await freePort()];
    // 5 % loss on each path, the lossy path of the acceptance (issue 16). At 10 % one packet in
    // ~16,000 of a run was lost for good once under the suite's load (session 13): lost on both
    // paths, then its NACK or retransmission lost on both again, attempt after attempt, for 3 s.
    const r1 = await lossyRelay(t, { targetPort: p1, loss: 0.05, seed: 1 });
    const r2 = await lossyRelay(t, { targetPort: p2, loss: 0.05, seed: 2 });
    // 3 s of recovery buffer on both sides (the receiver's is 3 × rist-recovery-rtt-max): with
    // loss in both directions on each path, a packet lost on both paths needs its NACK and its
    // retransmission through; a 2-core machine running the whole suite can stall a second.
    await ristsender(t, [
      '-b',
      '3000',
      '-p',
      '1',
      '-o',
      `rist://127.0.0.1:${r1.port}?weight=0,rist://127.0.0.1:${r2.port}?weight=0`,
    ]);
    const s = await stream(t, 'rist-two', {
      'rist-addr-port': [p1, p2],
      'rist-addr-intf': ['127.0.0.1', '127.0.0.1'],
      'rist-addr-weight': [0, 0],
      'rist-recovery-rtt-max': 1000,
    });
    // Counted from the moment both peers are connected: before that, the stream arrives on one
    // path only and what the relays dropped while the second listener was not bound yet is
    // not what this test is about.
    await waitFor(() => transport(s)['peersConnected'] === 2, 10_000, 'both peers connected');
    const lost0 = Number(transport(s)['lost']);
    const cc0 = ccErrors(s);
    const start = Date.now();
    await waitFor(() => Date.now() - start >= 8000, 12_000, 'the run');
    const tr = transport(s);
    t.comment(
      `relays: ${r1.stats.droppedForward} and ${r2.stats.droppedForward} dropped; rist: missing ${tr['missing']} recovered ${tr['recovered']} lost ${tr['lost']} (${lost0} before both peers were up)`,
    );
    t.ok(r1.stats.forwarded > 100 && r2.stats.forwarded > 100, 'both paths carried the stream');
    t.equal(tr['peersConnected'], 2, 'both peers connected');
    t.equal(Number(tr['lost']) - lost0, 0, 'nothing lost');
    t.equal(ccErrors(s) - cc0, 0, '0 CC errors');
    t.equal(tr['listening'], `127.0.0.1:${p1}, 127.0.0.1:${p2}`);
  },
);
