// The prompeg input fed by real senders through lossy relays (one per port; only the media one
// drops, 2 %, seeded): ffmpeg's `-fec prompeg=l=5:d=5` and GStreamer's rtpst2022-1-fecenc. The
// stream input counts 0 CC errors, the recoveries show in the status and on /metrics.
import t from 'tap';
import { ccErrors, fecRelays, portTriple, prompegHarness, transport } from '../helpers/prompeg.ts';
import { waitFor } from '../helpers/stream-host.ts';

const { registry, stream, ffmpegPrompeg, gstPrompeg } = await prompegHarness(t);
const RUN_MS = Number(process.env['SLUICE_PROMPEG_SECONDS'] ?? 8) * 1000;

t.test('ffmpeg prompeg 5 × 5 through 2 % media loss: recovered, 0 CC errors', async (t) => {
  const port = await portTriple();
  const relays = await fecRelays(t, port, 0.02, 7);
  const s = await stream(t, 'fec-ffmpeg', { input: [{ type: 'prompeg', port }] }, false);
  ffmpegPrompeg(t, relays.base);
  await waitFor(() => s.state() === 'running', 15_000, 'the stream running');
  const start = Date.now();
  await waitFor(() => Date.now() - start >= RUN_MS, RUN_MS + 5000, 'the run');
  const tr = transport(s);
  t.comment(
    `relay dropped ${relays.media.stats.droppedForward} of ${relays.media.stats.forwarded + relays.media.stats.droppedForward}; ${JSON.stringify(tr)}`,
  );
  t.ok(relays.media.stats.droppedForward >= 10, 'the relay dropped media packets');
  t.ok(relays.column.stats.forwarded > 0 && relays.row.stats.forwarded > 0, 'FEC flowed');
  t.same(tr['matrix'], { l: 5, d: 5 }, 'the matrix read from the FEC headers');
  t.ok(Number(tr['recovered']) >= 10, 'packets recovered');
  t.equal(Number(tr['unrecoverable']), 0, 'nothing lost for good');
  t.equal(ccErrors(s), 0, '0 CC errors at the stream input');
  t.equal(s.state(), 'running');
  const text = await registry.metrics();
  const m = text.match(
    /sluice_stream_input_transport_packets_total\{stream="fec-ffmpeg",protocol="prompeg",kind="recovered"\} (\d+)/,
  );
  t.ok(Number(m?.[1]) > 0, `/metrics shows the recovered packets (${m?.[1]})`);
});

t.test('GStreamer rtpst2022-1-fecenc 4 × 5 through 2 % media loss', async (t) => {
  const port = await portTriple();
  const relays = await fecRelays(t, port, 0.02, 11);
  const s = await stream(t, 'fec-gst', { input: [{ type: 'prompeg', port }] }, false);
  gstPrompeg(t, relays.base, 4, 5);
  await waitFor(() => s.state() === 'running', 15_000, 'the stream running');
  const start = Date.now();
  await waitFor(() => Date.now() - start >= RUN_MS, RUN_MS + 5000, 'the run');
  const tr = transport(s);
  t.comment(
    `relay dropped ${relays.media.stats.droppedForward} of ${relays.media.stats.forwarded + relays.media.stats.droppedForward}; ${JSON.stringify(tr)}`,
  );
  t.ok(relays.media.stats.droppedForward >= 10, 'the relay dropped media packets');
  t.same(tr['matrix'], { l: 4, d: 5 });
  t.ok(Number(tr['recovered']) >= 10, 'packets recovered');
  t.equal(Number(tr['unrecoverable']), 0, 'nothing lost for good');
  t.equal(ccErrors(s), 0, '0 CC errors at the stream input');
});
