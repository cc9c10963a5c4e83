// The prompeg output: sluice → sluice with the non-standard options (multiplexing, header-xor,
// passphrase) through a lossy relay, mismatched xor or passphrase reported in words, 1-D
// standard ports through three relays, and a standard RTP receiver (ffprobe) reading the media.
import type { Test } from 'tap';
import t from 'tap';
import type { StreamInstance } from '../../src/drivers/stream/instance.ts';
import { lossyRelay } from '../helpers/lossy-relay.ts';
import {
  ccErrors,
  fecRelays,
  input0,
  portTriple,
  prompegHarness,
  transport,
  udpPort,
} from '../helpers/prompeg.ts';
import { ffprobe, peer, waitFor } from '../helpers/stream-host.ts';

const { fixture, registry, stream } = await prompegHarness(t);
const RUN_MS = Number(process.env['SLUICE_PROMPEG_SECONDS'] ?? 8) * 1000;
const SECRET = 'a shared secret of some length';

/** A source stream (udp input fed by ffmpeg) with one prompeg output. */
async function source(t: Test, name: string, output: Record<string, unknown>) {
  const udp = await udpPort();
  const s = await stream(
    t,
    name,
    { input: [{ type: 'udp', port: udp }], output: [{ type: 'prompeg', ...output }] },
    false,
  );
  peer(t, 'ffmpeg', [
    ...['-hide_banner', '-loglevel', 'error', '-re', '-stream_loop', '-1', '-i', fixture],
    ...['-map', '0', '-c', 'copy', '-f', 'mpegts', `udp://127.0.0.1:${udp}?pkt_size=1316`],
  ]);
  await waitFor(() => s.state() === 'running', 15_000, `${name} running`);
  return s;
}

const out0 = (s: StreamInstance) => (s.status()['outputs'] as Record<string, unknown>[])[0]!;

t.test('sluice → sluice: multiplexed, header-xor, passphrase, 2 % loss: 0 CC errors', async (t) => {
  const port = await udpPort();
  const relay = await lossyRelay(t, { targetPort: port, loss: 0.02, seed: 5 });
  const opts = { 'prompeg-multiplexing': true, 'prompeg-header-xor': 0xa5, passphrase: SECRET };
  const rx = await stream(t, 'fec-rx', { input: [{ type: 'prompeg', port, ...opts }] }, false);
  const tx = await source(t, 'fec-tx', {
    address: '127.0.0.1',
    port: relay.port,
    'prompeg-columns': 6,
    'prompeg-rows': 4,
    ...opts,
  });
  await waitFor(() => rx.state() === 'running', 15_000, 'the receiver running');
  const start = Date.now();
  await waitFor(() => Date.now() - start >= RUN_MS, RUN_MS + 5000, 'the run');
  const tr = transport(rx);
  t.comment(`relay dropped ${relay.stats.droppedForward}; ${JSON.stringify(tr)}`);
  t.comment(`output: ${JSON.stringify(out0(tx))}`);
  t.match(out0(tx), { type: 'prompeg', mode: 'multiplexed', encrypted: true, headerXor: 0xa5 });
  t.ok(Number(out0(tx)['fecColumns']) > 0 && Number(out0(tx)['fecRows']) > 0, 'FEC sent');
  t.match(tr, { mode: 'multiplexed', encrypted: true, matrix: { l: 6, d: 4 } });
  t.ok(relay.stats.droppedForward >= 5, 'the relay dropped packets (media and FEC alike)');
  t.ok(Number(tr['recovered']) > 0, 'recovered');
  t.equal(Number(tr['unrecoverable']), 0, 'nothing lost for good');
  t.equal(Number(tr['fecHeaderErrors']), 0);
  t.equal(Number(tr['notMpegTs']), 0);
  t.equal(ccErrors(rx), 0, '0 CC errors');
  const text = await registry.metrics();
  t.match(
    text,
    /sluice_stream_output_transport_packets_total\{stream="fec-tx",output="0",protocol="prompeg",kind="fec"\} [1-9]/,
  );
});

t.test('mismatched header-xor: FEC not understood, and the status says why', async (t) => {
  const port = await udpPort();
  const rx = await stream(
    t,
    'fec-rx-xor',
    { input: [{ type: 'prompeg', port, 'prompeg-multiplexing': true, 'prompeg-header-xor': 1 }] },
    false,
  );
  await source(t, 'fec-tx-xor', {
    address: '127.0.0.1',
    port,
    'prompeg-multiplexing': true,
    'prompeg-header-xor': 2,
  });
  await waitFor(() => transport(rx)['fecProblem'], 15_000, 'the FEC problem reported');
  const tr = transport(rx);
  t.match(tr['fecProblem'], /FEC header not understood .*prompeg-header-xor differs\?/);
  t.ok(Number(tr['fecHeaderErrors']) >= 10);
  t.equal(Number(tr['recovered']), 0, 'no recovery');
});

t.test('mismatched passphrase: the input fails, its message says why', async (t) => {
  const port = await udpPort();
  const rx = await stream(
    t,
    'fec-rx-pass',
    { input: [{ type: 'prompeg', port, 'prompeg-multiplexing': true, passphrase: SECRET }] },
    false,
  );
  await source(t, 'fec-tx-pass', {
    address: '127.0.0.1',
    port,
    'prompeg-multiplexing': true,
    passphrase: 'not the same passphrase',
  });
  await waitFor(() => input0(rx)['message'], 15_000, 'the input message');
  t.equal(input0(rx)['state'], 'error');
  t.equal(input0(rx)['message'], 'payload does not decrypt to MPEG-TS: passphrase differs?');
  t.not(rx.state(), 'running');
});

t.test('1-D, standard ports through three relays (media loss only)', async (t) => {
  const port = await portTriple();
  const relays = await fecRelays(t, port, 0.02, 3);
  const rx = await stream(t, 'fec-rx-1d', { input: [{ type: 'prompeg', port }] }, false);
  const tx = await source(t, 'fec-tx-1d', {
    address: '127.0.0.1',
    port: relays.base,
    'prompeg-columns': 10,
    'prompeg-rows': 4,
    'prompeg-row-fec': false,
  });
  await waitFor(() => rx.state() === 'running', 15_000, 'the receiver running');
  const start = Date.now();
  await waitFor(() => Date.now() - start >= RUN_MS, RUN_MS + 5000, 'the run');
  const tr = transport(rx);
  t.comment(`relay dropped ${relays.media.stats.droppedForward}; ${JSON.stringify(tr)}`);
  t.equal(relays.row.stats.forwarded, 0, 'no row FEC in 1-D');
  t.ok(Number(out0(tx)['fecColumns']) > 0);
  t.same(tr['matrix'], { l: 10, d: 4 });
  t.ok(Number(tr['recoveredByColumn']) > 0, 'recovered by columns');
  t.equal(Number(tr['recoveredByRow']), 0);
  t.equal(Number(tr['recovered']) + Number(tr['unrecoverable']), Number(tr['lost']));
  t.comment(
    `unrecoverable ${tr['unrecoverable']} (two losses in one column cannot be repaired in 1-D)`,
  );
});

t.test('a standard RTP receiver (ffprobe) reads the media and ignores the FEC', async (t) => {
  const port = await portTriple();
  await source(t, 'fec-tx-std', { address: '127.0.0.1', port });
  // Plain RTP carries no PIDs ffprobe reports (as for the rtp output): the codecs are the test.
  const streams = await ffprobe(`rtp://127.0.0.1:${port}?timeout=8000000`);
  t.equal(streams.find((s) => s.codec_type === 'video')?.codec_name, 'h264', 'H.264 video');
  t.equal(streams.find((s) => s.codec_type === 'audio')?.codec_name, 'aac', 'AAC audio');
});
