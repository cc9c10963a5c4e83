// The `rtmp` input with real peers on loopback: nginx with the RTMP module fed by ffmpeg, a
// stream pulling from it (ffprobe reads H.264 + AAC from /name/mpegts and /name/index.m3u8);
// ffmpeg publishing straight to sluice (`rtmp://@host:port/app/key`), a wrong key refused;
// failover from a dead RTMP primary to an HLS backup and back with no CC error downstream; hostile peers (a chunk size of 2^31, a
// malformed AMF packet) on both sides — bounded memory, the reason in words, no crash.
import { execFileSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import http from 'node:http';
import net from 'node:net';
import { join } from 'node:path';
import tls from 'node:tls';
import t, { type Test } from 'tap';
import type { StreamInstance } from '../../src/drivers/stream/instance.ts';
import { TsAnalyzer } from '../../src/native/ts.ts';
import { createOttService, OTT_FACTORY_SERVICE } from '../../src/ott/index.ts';
import { encodeAmf0 } from '../../src/protocols/rtmp/amf0.ts';
import { ChunkWriter, MSG_COMMAND_AMF0, setChunkSize } from '../../src/protocols/rtmp/chunk.ts';
import { startNginx } from '../helpers/nginx.ts';
import { haveNginxRtmp, startNginxRtmp } from '../helpers/nginx-rtmp.ts';
import {
  avOffset,
  ffprobe,
  freePort,
  httpFor,
  makeHost,
  openStream,
  peer,
  tempDir,
  waitFor,
} from '../helpers/stream-host.ts';
import { selfSigned } from '../helpers/tls.ts';

if (!haveNginxRtmp()) {
  t.fail('libnginx-mod-rtmp is not installed (scripts/setup installs it)');
  process.exit(1);
}

const host = makeHost(tempDir(t));
host.services.set(OTT_FACTORY_SERVICE, createOttService);
const base = await httpFor(t, host.router);
const origin = await startNginxRtmp(t, {
  live: 'live on;',
  strict: 'live on; idle_streams off;',
});

/** ffmpeg encoding a live test picture + tone as H.264 + AAC in FLV to `url`. */
function publish(t: Test, url: string) {
  return peer(t, 'ffmpeg', [
    ...['-hide_banner', '-loglevel', 'error', '-re'],
    ...['-f', 'lavfi', '-i', 'testsrc2=size=320x240:rate=25'],
    ...['-f', 'lavfi', '-i', 'sine=frequency=440:sample_rate=48000'],
    ...['-c:v', 'libx264', '-preset', 'ultrafast', '-g', '25', '-b:v', '400k'],
    ...['-c:a', 'aac', '-b:a', '64k', '-f', 'flv', url],
  ]);
}

function transport(s: StreamInstance, i = 0): Record<string, unknown> {
  return (s.status()['inputs'] as Record<string, Record<string, unknown>>[])[i]!['transport']!;
}

function message(s: StreamInstance, i = 0): string {
  return String((s.status()['inputs'] as Record<string, unknown>[])[i]!['message'] ?? '');
}

function expectAv(t: Test, streams: { codec_type: string; codec_name: string }[]): void {
  t.equal(streams.find((s) => s.codec_type === 'video')?.codec_name, 'h264', 'H.264 video');
  t.equal(streams.find((s) => s.codec_type === 'audio')?.codec_name, 'aac', 'AAC audio');
}

t.test('pull from nginx-rtmp: H.264 + AAC on /name/mpegts and in HLS', async (t) => {
  publish(t, `${origin.base}/live/src`);
  const s = await openStream(
    t,
    host,
    {
      'stream-name': 'rpull',
      'stream-timeout': 3_000_000,
      'ott-hls': 1,
      'ott-segment-duration': 1,
      input: [{ type: 'rtmp', url: `${origin.base}/live/src` }],
    },
    20_000,
  );
  expectAv(t, await ffprobe(`${base}/rpull/mpegts`));
  await waitFor(
    async () => /#EXTINF/.test(await (await fetch(`${base}/rpull/index.m3u8`)).text()),
    20_000,
    'an HLS segment',
  );
  expectAv(t, await ffprobe(`${base}/rpull/index.m3u8`));
  const tr = transport(s);
  t.match(tr, { mode: 'pull', state: 'playing', tracks: 'h264+aac', lastStatus: /Play/ });
  t.ok(Number(tr['videoFrames']) > 0 && Number(tr['audioFrames']) > 0, 'frames of each track');
  t.ok(Number(tr['bytes']) > 10_000, 'bytes counted');
  t.equal(message(s), '', 'no fault');
  // Audio and video keep the source's timing: the encoder starts both at 0.
  const off = await avOffset(`${base}/rpull/mpegts`);
  t.ok(Math.abs(off) < 0.2, `first audio PTS − first video PTS ${off} s`);
});

t.test('no such stream: NetStream.Play.StreamNotFound in words', async (t) => {
  const s = await openStream(t, host, {
    'stream-name': 'rmissing',
    input: [{ type: 'rtmp', url: `${origin.base}/strict/nothing` }],
  });
  await waitFor(() => /StreamNotFound/.test(message(s)), 10_000, 'StreamNotFound');
  t.pass(message(s));
  const port = await freePort();
  const r = await openStream(t, host, {
    'stream-name': 'rrefused',
    input: [{ type: 'rtmp', url: `rtmp://127.0.0.1:${port}/live/x` }],
  });
  await waitFor(() => /refused the connection/.test(message(r)), 10_000, 'refused');
  t.pass(message(r));
});

t.test('publish: ffmpeg pushes to sluice; a wrong key is refused', async (t) => {
  const port = await freePort();
  const s = await openStream(t, host, {
    'stream-name': 'rpub',
    'stream-timeout': 3_000_000,
    input: [{ type: 'rtmp', url: `rtmp://@127.0.0.1:${port}/live/s3cret` }],
  });
  await waitFor(() => /waiting for a publisher/.test(message(s)), 5_000, 'waiting');
  const wrong = publish(t, `rtmp://127.0.0.1:${port}/live/guess`);
  const code = await new Promise<number | null>((r) => wrong.once('exit', (c) => r(c)));
  t.not(code, 0, 'ffmpeg with a wrong key fails');
  await waitFor(() => Number(transport(s)['refused']) >= 1, 5_000, 'refusal counted');
  t.match(transport(s)['lastRefused'], /wrong stream key/);
  publish(t, `rtmp://127.0.0.1:${port}/live/s3cret`);
  await waitFor(() => s.state() === 'running', 20_000, 'rpub running');
  expectAv(t, await ffprobe(`${base}/rpub/mpegts`));
  const tr = transport(s);
  t.match(tr, { mode: 'publish', state: 'publishing', tracks: 'h264+aac', publishes: 1 });
  // A second publisher on the same key while one publishes is refused too.
  const second = publish(t, `rtmp://127.0.0.1:${port}/live/s3cret`);
  await new Promise((r) => second.once('exit', r));
  t.match(transport(s)['lastRefused'], /already publishing/);
  t.equal(transport(s)['publishes'], 1);
});

/** A raw TCP RTMP client: handshake, then `chunks`; resolves when the server hangs up. */
function rawClient(port: number, chunks: Buffer[]): Promise<void> {
  return new Promise((resolve) => {
    const s = net.connect({ host: '127.0.0.1', port }, () => {
      const c0c1 = Buffer.alloc(1537);
      c0c1[0] = 3;
      s.write(c0c1);
    });
    let got = 0;
    let sent = false;
    s.on('data', (d) => {
      got += d.length;
      if (!sent && got >= 1 + 2 * 1536) {
        sent = true;
        s.write(Buffer.alloc(1536)); // C2
        for (const c of chunks) s.write(c);
      }
    });
    s.on('error', () => {});
    s.on('close', () => resolve());
  });
}

t.test('hostile publishers: chunk size 2^31, malformed AMF — refused, bounded', async (t) => {
  const port = await freePort();
  const s = await openStream(t, host, {
    'stream-name': 'rhostile',
    input: [{ type: 'rtmp', url: `rtmp://@127.0.0.1:${port}/live/k` }],
  });
  await waitFor(() => /waiting for a publisher/.test(message(s)), 5_000, 'waiting');
  const rss = process.memoryUsage().rss;
  const w = new ChunkWriter();
  await rawClient(port, [w.write(setChunkSize(0x80000000))]);
  await waitFor(
    () => /invalid chunk size 2147483648/.test(String(transport(s)['lastRefused'])),
    5_000,
    'chunk size',
  );
  // A connect command whose object claims a string longer than the packet.
  const bad = Buffer.concat([
    encodeAmf0('connect', 1),
    Buffer.of(0x03, 0, 3),
    Buffer.from('app'),
    Buffer.of(0x02, 0xff, 0xff, 0x41),
  ]);
  await rawClient(port, [
    w.write({ csid: 3, type: MSG_COMMAND_AMF0, streamId: 0, timestamp: 0, payload: bad }),
  ]);
  await waitFor(
    () => /AMF0: packet truncated/.test(String(transport(s)['lastRefused'])),
    5_000,
    'AMF',
  );
  // A message header announcing 16 MiB: over the cap, refused before anything is allocated.
  const huge = Buffer.of(0x03, 0, 0, 0, 0xff, 0xff, 0xff, 20, 0, 0, 0, 0);
  await rawClient(port, [huge]);
  await waitFor(
    () => /over the .* byte cap/.test(String(transport(s)['lastRefused'])),
    5_000,
    'cap',
  );
  t.ok(process.memoryUsage().rss - rss < 100 * 1024 * 1024, 'memory stayed bounded');
  t.equal(Number(transport(s)['refused']), 3);
  t.match(message(s), /waiting for a publisher/, 'still listening');
});

t.test('hostile origin: a chunk size of 2^31 is the fault in words', async (t) => {
  const server = net.createServer((sock) => {
    sock.on('error', () => {});
    sock.once('data', () => {
      const s0s1s2 = Buffer.alloc(1 + 2 * 1536);
      s0s1s2[0] = 3;
      sock.write(s0s1s2);
      sock.write(new ChunkWriter().write(setChunkSize(0x80000000)));
    });
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  t.teardown(() => server.close());
  const port = (server.address() as net.AddressInfo).port;
  const s = await openStream(t, host, {
    'stream-name': 'rbadorigin',
    input: [{ type: 'rtmp', url: `rtmp://127.0.0.1:${port}/live/x` }],
  });
  await waitFor(() => /invalid chunk size 2147483648/.test(message(s)), 10_000, 'fault');
  t.match(message(s), /protocol error from origin/);
});

t.test(
  'failover: a dead RTMP primary hands over to an HLS backup and back, no CC error',
  async (t) => {
    // The backup: a VOD rendition served by nginx over HTTP.
    const root = tempDir(t, 'sluice-rtmp-hls-');
    execFileSync('ffmpeg', [
      ...['-hide_banner', '-loglevel', 'error', '-y'],
      ...['-f', 'lavfi', '-i', 'testsrc2=size=320x240:rate=25:duration=6'],
      ...['-f', 'lavfi', '-i', 'sine=frequency=880:sample_rate=48000:duration=6'],
      ...['-c:v', 'libx264', '-preset', 'ultrafast', '-g', '25', '-c:a', 'aac', '-b:a', '64k'],
      ...['-f', 'hls', '-hls_time', '1', '-hls_list_size', '0', '-hls_playlist_type', 'vod'],
      join(root, 'index.m3u8'),
    ]);
    const web = await startNginx(t, root);
    const enc = publish(t, `${origin.base}/live/dying`);
    const s = await openStream(
      t,
      host,
      {
        'stream-name': 'rfo',
        'stream-timeout': 2_000_000,
        input: [
          { type: 'rtmp', url: `${origin.base}/live/dying`, 'client-timeout': 2 },
          { type: 'hls', uri: `${web.base}/index.m3u8` },
        ],
      },
      20_000,
    );
    t.equal(s.status()['activeInput'], 0, 'on the rtmp primary');
    // A client reads the output across both switches, for the CC check.
    const raw: Buffer[] = [];
    const req = http.get(`${base}/rfo/mpegts`, (res) => res.on('data', (d: Buffer) => raw.push(d)));
    req.on('error', () => undefined);
    t.teardown(() => req.destroy());
    await waitFor(() => raw.length > 10, 10_000, 'the client reading');
    enc.kill('SIGKILL');
    await waitFor(() => s.status()['activeInput'] === 1, 20_000, 'backup active');
    await waitFor(() => message(s) !== '', 20_000, 'primary fault in words');
    t.match(message(s), /no data from origin|closed the connection|Unpublish/);
    // The encoder comes back: the stream returns to its primary.
    publish(t, `${origin.base}/live/dying`);
    await waitFor(() => s.status()['activeInput'] === 0, 40_000, 'primary active again');
    t.ok(Number(transport(s)['reconnects']) >= 1, 'the pull reconnected');
    const n = raw.length;
    await waitFor(() => raw.length > n + 10, 10_000, 'output after the switch back');
    req.destroy();
    const a = new TsAnalyzer({ tr101290: true });
    a.push(Buffer.concat(raw));
    const st = a.stats();
    t.ok(st.packets > 1000, `client read ${st.packets} packets`);
    t.equal(st.tr101290.continuityCountError, 0, 'no CC error in the output across two switches');
  },
);

t.test(
  'rtmps:// through a TLS front: tls-verify off plays, on refuses a self-signed origin',
  async (t) => {
    const { cert, key } = await selfSigned(tempDir(t), 'origin');
    const front = tls.createServer({ cert: readFileSync(cert), key: readFileSync(key) }, (c) => {
      const up = net.connect({ host: '127.0.0.1', port: origin.port });
      c.pipe(up).pipe(c);
      c.on('error', () => up.destroy());
      up.on('error', () => c.destroy());
    });
    await new Promise<void>((r) => front.listen(0, '127.0.0.1', r));
    t.teardown(() => front.close());
    const port = (front.address() as net.AddressInfo).port;
    publish(t, `${origin.base}/live/tlssrc`);
    const s = await openStream(
      t,
      host,
      {
        'stream-name': 'rtls',
        'stream-timeout': 3_000_000,
        input: [{ type: 'rtmp', url: `rtmps://127.0.0.1:${port}/live/tlssrc` }],
      },
      20_000,
    );
    expectAv(t, await ffprobe(`${base}/rtls/mpegts`));
    t.equal(transport(s)['state'], 'playing');
    const v = await openStream(t, host, {
      'stream-name': 'rtlsverify',
      input: [{ type: 'rtmp', url: `rtmps://127.0.0.1:${port}/live/tlssrc`, 'tls-verify': true }],
    });
    await waitFor(() => /TLS failure/.test(message(v)), 10_000, 'TLS failure');
    t.match(message(v), /self-signed/);
  },
);
