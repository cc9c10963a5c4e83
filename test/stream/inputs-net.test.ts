// Network inputs with real peers: ffmpeg → UDP multicast / RTP / TCP → stream → /name/mpegts →
// ffprobe sees H.264 + AAC with the source PIDs; and the UDP output read back by ffprobe.
import t, { type Test } from 'tap';
import { StreamDriver } from '../../src/drivers/stream/driver.ts';
import type { StreamInstance } from '../../src/drivers/stream/instance.ts';
import {
  ffprobe,
  freePort,
  httpFor,
  makeFixture,
  makeHost,
  openStream,
  playFixture,
  streamResource,
  tempDir,
  waitFor,
} from '../helpers/stream-host.ts';

const dir = tempDir(t);
const fixture = makeFixture(dir);
const host = makeHost(dir);
const driver = new StreamDriver();
const base = await httpFor(t, host.router);

const stream = (name: string, spec: Record<string, unknown>): Promise<StreamInstance> =>
  openStream(t, host, { 'stream-name': name, ...spec }, 8000);

function expectSource(t: Test, streams: Awaited<ReturnType<typeof ffprobe>>, pids = true): void {
  const v = streams.find((s) => s.codec_type === 'video');
  const a = streams.find((s) => s.codec_type === 'audio');
  t.equal(v?.codec_name, 'h264', 'H.264 video');
  t.equal(a?.codec_name, 'aac', 'AAC audio');
  if (!pids) return;
  t.equal(v?.id, '0x100', 'video keeps source PID');
  t.equal(a?.id, '0x101', 'audio keeps source PID');
}

t.test('udp multicast on loopback', async (t) => {
  const port = await freePort();
  playFixture(
    t,
    fixture,
    'mpegts',
    `udp://239.77.0.1:${port}?pkt_size=1316&localaddr=127.0.0.1&ttl=1`,
  );
  const s = await stream('mc', {
    input: [{ type: 'udp', address: '239.77.0.1', port, 'bind-if': '127.0.0.1' }],
  });
  expectSource(t, await ffprobe(`${base}/mc/mpegts`));
  const st = s.status();
  t.equal((st['programs'] as { pnr: number }[])[0]?.pnr, 1, 'programme from PAT/PMT');
  const inp = (st['inputs'] as Record<string, Record<string, unknown>>[])[0]!;
  t.ok(Number(inp['transport']!['bufferGranted']) > 0, 'granted buffer reported');
});

t.test('rtp unicast with reordering on', async (t) => {
  const port = await freePort();
  playFixture(t, fixture, 'rtp_mpegts', `rtp://127.0.0.1:${port}?pkt_size=1328`);
  const s = await stream('rtp', { input: [{ type: 'rtp', port, 'rtp-reorder': true }] });
  expectSource(t, await ffprobe(`${base}/rtp/mpegts`));
  const tr = (s.status()['inputs'] as Record<string, Record<string, unknown>>[])[0]!['transport']!;
  t.same(tr['payloadTypes'], [33], 'RTP payload type 33 (MP2T) parsed');
  t.equal(tr['notRtp'], 0);
});

t.test('tcp client with reconnect', async (t) => {
  const port = await freePort();
  const s = await (async () => {
    // The stream starts first and keeps retrying until the listener is there.
    const p = driver.create(
      streamResource({
        'stream-name': 'tcp',
        input: [{ type: 'tcp', address: '127.0.0.1', port }],
      }),
      host,
    );
    const inst = (await p) as StreamInstance;
    t.teardown(() => inst.close());
    playFixture(t, fixture, 'mpegts', `tcp://127.0.0.1:${port}?listen=1`);
    await waitFor(() => inst.state() === 'running', 10_000, 'tcp running');
    return inst;
  })();
  expectSource(t, await ffprobe(`${base}/tcp/mpegts`));
  const tr = (s.status()['inputs'] as Record<string, Record<string, unknown>>[])[0]!['transport']!;
  t.equal(tr['connected'], true);
});

t.test('udp output read back by ffprobe', async (t) => {
  const outPort = await freePort();
  await stream('out', {
    input: [{ type: 'file', 'file-path': fixture }],
    output: [{ type: 'udp', address: '127.0.0.1', port: outPort }],
  });
  expectSource(t, await ffprobe(`udp://127.0.0.1:${outPort}?timeout=8000000`));
});

t.test('rtp output at constant rate (bitrate-mode 3) read back by ffprobe', async (t) => {
  const outPort = await freePort();
  const s = await stream('cbr', {
    'bitrate-mode': 3,
    'mpegts-bitrate': 2000,
    input: [{ type: 'file', 'file-path': fixture }],
    output: [{ type: 'rtp', address: '127.0.0.1', port: outPort }],
  });
  // ffprobe's RTP demuxer does not report TS PIDs as stream ids: codecs only here.
  expectSource(t, await ffprobe(`rtp://127.0.0.1:${outPort}?timeout=8000000`), false);
  const o = (s.status()['outputs'] as Record<string, Record<string, unknown>>[])[0]!;
  t.equal(o['cbr']!['rate'], 2_000_000, 'paced at mpegts-bitrate');
  t.ok(Number(o['cbr']!['stuffedPackets']) > 0, 'padded with null packets');
});
