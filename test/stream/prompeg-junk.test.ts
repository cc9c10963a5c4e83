// Bad input at every port of a prompeg input while ffmpeg sends the real stream: random bytes,
// RTP from a stray SSRC, forged FEC headers (L/D beyond the limits, lengths out of range, SN base
// far away), oversized datagrams. Nothing crashes, nothing reaches the stream (0 CC errors), and
// each kind is counted.
import { createSocket } from 'node:dgram';
import t from 'tap';
import { buildFec } from '../../src/protocols/fec/header.ts';
import { seededRandom } from '../helpers/lossy-relay.ts';
import { ccErrors, portTriple, prompegHarness, transport } from '../helpers/prompeg.ts';
import { waitFor } from '../helpers/stream-host.ts';

const { stream, ffmpegPrompeg } = await prompegHarness(t);

t.test('junk at the media, column and row ports beside a real sender', async (t) => {
  const port = await portTriple();
  const s = await stream(t, 'fec-junk', { input: [{ type: 'prompeg', port }] }, false);
  ffmpegPrompeg(t, port);
  await waitFor(() => s.state() === 'running', 15_000, 'the stream running');
  const cc0 = ccErrors(s);
  const sock = createSocket('udp4');
  t.teardown(() => sock.close());
  const rand = seededRandom(42);
  const bytes = (n: number) => Buffer.from(Array.from({ length: n }, () => (rand() * 256) | 0));
  const send = (d: Buffer, p: number) =>
    new Promise<void>((resolve) => sock.send(d, p, '127.0.0.1', () => resolve()));
  /** A well-formed FEC packet (SN base 0) with one field forged. */
  const forged = (patch: (d: Buffer) => void, row = false) => {
    const d = buildFec({
      row,
      seq: 0,
      timestamp: 0,
      ssrc: 0,
      snBase: 0,
      offset: row ? 1 : 5,
      na: row ? 5 : 5,
      lengthRecovery: 1316,
      ptRecovery: 33,
      tsRecovery: 0,
      pxccRecovery: 0,
      markerRecovery: 0,
      payload: bytes(1316),
    });
    patch(d);
    return d;
  };
  const h = 12; // FEC header offset
  for (let round = 0; round < 40; round++) {
    for (const p of [port, port + 2, port + 4]) {
      await send(bytes(1 + ((rand() * 1400) | 0)), p); // random bytes
      await send(bytes(9000), p); // oversized
    }
    const rtp = bytes(1328);
    rtp[0] = 0x80;
    rtp[1] = 33;
    rtp[12] = 0x47; // looks like TS, from a stray SSRC
    await send(rtp, port);
    await send(
      forged((d) => (d[h + 13] = 25)),
      port + 2,
    ); // L beyond 20
    await send(
      forged((d) => (d[h + 14] = 30)),
      port + 2,
    ); // D beyond 20
    await send(
      forged((d) => (d[h + 13] = 11)),
      port + 2,
    ); // a valid header (11 × 5), SN base 0: far from the media
    await send(
      forged((d) => d.writeUInt16BE(0xffff, h + 2), true),
      port + 4,
    ); // length recovery beyond the payload (unusable if ever in the window)
    await send(
      forged((d) => d.writeUInt16BE((rand() * 65536) | 0, h), true),
      port + 4,
    ); // SN base anywhere
    await send(
      forged((d) => (d[h + 12] = 0x40 | 0x08), true),
      port + 4,
    ); // FEC type not XOR
  }
  // The real stream keeps flowing: wait for a few more seconds of it.
  const received = Number(transport(s)['received']);
  await waitFor(() => Number(transport(s)['received']) > received + 300, 10_000, 'more media');
  const tr = transport(s);
  t.comment(JSON.stringify(tr));
  t.equal(s.state(), 'running', 'still running');
  t.equal(ccErrors(s) - cc0, 0, 'no CC error from the junk');
  t.ok(Number(tr['oversized']) >= 120, 'oversized datagrams counted');
  t.ok(Number(tr['notRtp']) > 0, 'non-RTP datagrams counted');
  t.ok(Number(tr['foreignSsrc']) + Number(tr['notMpegTs']) >= 40, 'stray RTP counted');
  t.ok(Number(tr['fecHeaderErrors']) >= 120, 'forged FEC headers refused');
  t.ok(Number(tr['fecOutOfWindow']) > 0, 'FEC far from the media dropped');
  t.equal(Number(tr['unrecoverable']), 0, 'nothing of the real stream lost');
});
