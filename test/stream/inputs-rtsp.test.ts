// The `rtsp` input with real peers on loopback: GStreamer's RTSP server (test/helpers/
// rtsp-server.py: H.264 + AAC test pattern, with and without Digest/Basic auth, HEVC, MP2T) read
// over UDP, TCP interleaved and tunnelled over HTTP, ffprobe reading H.264 + AAC from
// /name/mpegts with audio and video in sync; H.264 and HEVC with B-frames, their DTS checked
// packet by packet and decoded by ffmpeg; and a scripted server in this file for what a real
// one will not do on demand: keep-alives left unanswered, no media, a 1 MB reply header, an SDP of
// unknown codecs, 404 (and the cookies and user-agent it is sent).
import { spawn, spawnSync } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import { createServer, type Socket } from 'node:net';
import t, { type Test } from 'tap';
import { StreamDriver } from '../../src/drivers/stream/driver.ts';
import type { StreamInstance } from '../../src/drivers/stream/instance.ts';
import {
  avOffset,
  ffprobe,
  freePort,
  httpFor,
  makeHost,
  streamResource,
  tempDir,
  waitFor,
} from '../helpers/stream-host.ts';

const dir = tempDir(t);
const host = makeHost(dir);
const driver = new StreamDriver();
const base = await httpFor(t, host.router);
const SERVER = new URL('../helpers/rtsp-server.py', import.meta.url).pathname;

/** Start the GStreamer RTSP server; resolves with its URL once it listens. */
async function gst(t: Test, args: string[] = [], port?: number): Promise<string> {
  return (await gstProcess(t, args, port)).url;
}

async function gstProcess(
  t: Test,
  args: string[] = [],
  fixedPort?: number,
): Promise<{ url: string; proc: ReturnType<typeof spawn> }> {
  const port = fixedPort ?? (await freePort());
  const p = spawn('/usr/bin/python3', [SERVER, String(port), ...args], {
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  p.stderr.resume();
  t.teardown(() => {
    if (p.exitCode === null && p.signalCode === null) p.kill('SIGKILL');
  });
  await new Promise<void>((resolve, reject) => {
    p.stdout.on('data', (d: Buffer) => {
      if (d.toString().includes('ready')) resolve();
    });
    p.on('exit', (code) => reject(new Error(`rtsp-server.py exited ${code}`)));
  });
  return { url: `rtsp://127.0.0.1:${port}/live`, proc: p };
}

async function stream(
  t: Test,
  name: string,
  input: Record<string, unknown>,
  running = true,
): Promise<StreamInstance> {
  const inst = (await driver.create(
    streamResource({ 'stream-name': name, 'stream-timeout': 3_000_000, input: [input] }),
    host,
  )) as StreamInstance;
  t.teardown(() => inst.close());
  if (running) await waitFor(() => inst.state() === 'running', 20_000, `${name} running`);
  return inst;
}

function input(s: StreamInstance, i = 0): Record<string, unknown> {
  return (s.status()['inputs'] as Record<string, unknown>[])[i]!;
}

function transport(s: StreamInstance): Record<string, unknown> {
  return input(s)['transport'] as Record<string, unknown>;
}

async function expectAv(t: Test, name: string): Promise<void> {
  const streams = await ffprobe(`${base}/${name}/mpegts`);
  t.equal(streams.find((s) => s.codec_type === 'video')?.codec_name, 'h264', 'H.264 video');
  t.equal(streams.find((s) => s.codec_type === 'audio')?.codec_name, 'aac', 'AAC audio');
}

t.test('GStreamer H.264 + AAC over UDP', async (t) => {
  const url = await gst(t);
  const s = await stream(t, 'rtsp-udp', { type: 'rtsp', uri: url, transport: 0 });
  await expectAv(t, 'rtsp-udp');
  // Both test sources start together at the server: audio and video within 100 ms.
  const off = await avOffset(`${base}/rtsp-udp/mpegts`);
  t.ok(Math.abs(off) < 0.1, `audio - video first PTS ${off.toFixed(3)} s`);
  t.match(transport(s), { state: 'playing', transport: 'udp', sync: 'rtp-info' });
  const tracks = transport(s)['tracks'] as Record<string, number>[];
  t.equal(tracks.length, 2);
  t.ok(
    tracks.every((x) => x['frames']! > 0),
    'frames on both tracks',
  );
});

t.test('GStreamer H.264 + AAC over TCP interleaved, Digest auth', async (t) => {
  const url = await gst(t, ['--auth', 'digest', '--user', 'cam', '--password', 'pw']);
  const s = await stream(t, 'rtsp-tcp', {
    type: 'rtsp',
    uri: url,
    transport: 1,
    'rtsp-login': 'cam',
    'rtsp-password': 'pw',
  });
  await expectAv(t, 'rtsp-tcp');
  t.match(transport(s), { state: 'playing', transport: 'tcp' });
  const bad = await stream(
    t,
    'rtsp-badpw',
    { type: 'rtsp', uri: url, transport: 1, 'rtsp-login': 'cam', 'rtsp-password': 'nope' },
    false,
  );
  await waitFor(
    () => /401.*refused/.test(String(input(bad)['message'] ?? '')),
    10_000,
    '401 fault',
  );
});

t.test('GStreamer Basic auth over UDP', async (t) => {
  const url = await gst(t, ['--auth', 'basic', '--user', 'cam', '--password', 'pw']);
  await stream(t, 'rtsp-basic', {
    type: 'rtsp',
    uri: url.replace('rtsp://', 'rtsp://cam:pw@'),
    transport: 0,
  });
  await expectAv(t, 'rtsp-basic');
});

t.test('GStreamer MP2T over RTP is passed through', async (t) => {
  const url = await gst(t, ['--codec', 'mp2t']);
  await stream(t, 'rtsp-ts', { type: 'rtsp', uri: url, transport: 1 });
  await expectAv(t, 'rtsp-ts');
});

t.test('GStreamer HEVC over TCP', async (t) => {
  const url = await gst(t, ['--codec', 'hevc']);
  await stream(t, 'rtsp-hevc', { type: 'rtsp', uri: url, transport: 1 });
  const streams = await ffprobe(`${base}/rtsp-hevc/mpegts`);
  t.equal(streams.find((s) => s.codec_type === 'video')?.codec_name, 'hevc', 'HEVC video');
});

/** The bytes of `url` for `ms` from the first byte (the stream's own pace). */
async function capture(url: string, ms: number): Promise<Buffer> {
  const ac = new AbortController();
  const res = await fetch(url, { signal: ac.signal });
  const reader = res.body!.getReader();
  const parts: Uint8Array[] = [];
  let end = 0;
  for (;;) {
    const { done, value } = await reader.read();
    if (done) break;
    parts.push(value);
    if (!end) end = Date.now() + ms;
    if (Date.now() >= end) break;
  }
  ac.abort();
  return Buffer.concat(parts);
}

/** Video packets and decoding of a TS file: ffprobe's packets (decoding order) and frames
 *  (presentation order), and what ffmpeg's decoder complains about. */
function inspect(file: string): {
  packets: { pts: number; dts: number; key: boolean }[];
  frames: number[];
  decodeErrors: string[];
} {
  const probe = (what: string) =>
    spawnSync(
      'ffprobe',
      ['-v', 'error', '-select_streams', 'v', ...what.split(' '), '-of', 'json', file],
      { encoding: 'utf8', timeout: 30_000 },
    ).stdout;
  const p = JSON.parse(probe('-show_entries packet=pts,dts,flags')) as {
    packets: { pts: number; dts: number; flags: string }[];
  };
  const f = JSON.parse(probe('-show_entries frame=pts')) as { frames: { pts: number }[] };
  const dec = spawnSync('ffmpeg', ['-v', 'warning', '-i', file, '-map', '0:v', '-f', 'null', '-'], {
    encoding: 'utf8',
    timeout: 30_000,
  });
  return {
    packets: p.packets.map((x) => ({ pts: x.pts, dts: x.dts, key: x.flags.startsWith('K') })),
    frames: f.frames.map((x) => x.pts),
    decodeErrors: dec.stderr.split('\n').filter((l) => l.trim() !== ''),
  };
}

/** B-frames over RTSP: DTS from the SPS's reorder depth, checked on sluice's output. */
async function expectBframes(t: Test, codec: 'h264' | 'hevc'): Promise<void> {
  const url = await gst(t, ['--codec', codec, '--bframes', '2']);
  const name = `rtsp-b-${codec}`;
  const s = await stream(t, name, { type: 'rtsp', uri: url, transport: 1 });
  await waitFor(
    () => (transport(s)['tracks'] as { frames: number }[])[0]!.frames > 0,
    10_000,
    'frames',
  );
  const file = `${dir}/${name}.ts`;
  writeFileSync(file, await capture(`${base}/${name}/mpegts`, 4000));
  const { packets, frames, decodeErrors } = inspect(file);
  // From the first key frame on (the capture starts anywhere in a GOP).
  const from = packets.findIndex((p) => p.key);
  const v = packets.slice(from);
  t.ok(v.length >= 60, `${v.length} video packets from the first key frame`);
  let bad = 0;
  for (let i = 0; i < v.length; i++) {
    if (!(v[i]!.dts <= v[i]!.pts)) bad++;
    if (i > 0 && !(v[i]!.dts > v[i - 1]!.dts)) bad++;
  }
  t.equal(bad, 0, 'DTS ≤ PTS and strictly increasing on every packet');
  const reordered = v.filter((p, i) => i > 0 && p.pts < v[i - 1]!.pts).length;
  t.ok(reordered >= v.length / 4, `${reordered} frames presented before the one decoded before`);
  const FRAME = 3600; // 25 fps
  const delays = new Set(v.filter((p) => p.pts !== p.dts).map((p) => p.pts - p.dts));
  // IPBB: a P frame after two B frames shows 3 frames after it is decoded, the I frame 1
  // (reorder depth 1 = x264/x265 with bframes=2, no pyramid); B frames 0.
  t.ok(
    [...delays].every((d) => d === FRAME || d === 3 * FRAME),
    `PTS − DTS of I/P frames: ${[...delays].map((d) => d / FRAME)} frames`,
  );
  t.match(
    (transport(s)['tracks'] as Record<string, unknown>[])[0],
    { dts: { depth: 1, source: 'sps', errors: 0 } },
    'depth 1 read from the SPS',
  );
  // Decoding: every packet from the key frame on gives a frame, presented in order.
  const shown = frames.filter((p) => p >= v[0]!.pts);
  t.ok(shown.length >= v.length - 2, `${shown.length} frames decoded of ${v.length} packets`);
  t.ok(
    shown.every((p, i) => i === 0 || p > shown[i - 1]!),
    'frames come out in presentation order',
  );
  t.same(
    decodeErrors.filter((l) => /monoton|invalid|dts|Error/i.test(l)),
    [],
    'ffmpeg decodes without timestamp errors',
  );
}

t.test('GStreamer H.264 with B-frames: DTS from the SPS reorder depth', async (t) => {
  await expectBframes(t, 'h264');
});

t.test('GStreamer HEVC with B-frames: DTS from the SPS reorder depth', async (t) => {
  await expectBframes(t, 'hevc');
});

t.test(
  'a server that goes away: fault in words, reopened with backoff when it is back',
  async (t) => {
    const first = await gstProcess(t);
    const port = Number(new URL(first.url).port);
    const s = await stream(t, 'rtsp-back', {
      type: 'rtsp',
      uri: first.url,
      transport: 1,
      'client-timeout': 2,
    });
    first.proc.kill('SIGKILL');
    await waitFor(
      () => /closed the connection|refused|no media/.test(String(transport(s)['lastError'] ?? '')),
      10_000,
      'fault',
    );
    await gst(t, [], port);
    await waitFor(
      () => transport(s)['state'] === 'playing' && (transport(s)['reconnects'] as number) >= 1,
      20_000,
      'reopened',
    );
    await expectAv(t, 'rtsp-back');
  },
);

t.test('GStreamer H.264 + AAC tunnelled over HTTP (transport 2)', async (t) => {
  const url = await gst(t);
  const s = await stream(t, 'rtsp-http', { type: 'rtsp', uri: url, transport: 2 });
  await expectAv(t, 'rtsp-http');
  t.match(transport(s), { state: 'playing', transport: 'http' });
});

/** A scripted RTSP server: `answer` gets each request and writes what it likes. */
async function scripted(
  t: Test,
  answer: (method: string, cseq: string, sock: Socket, raw: string) => void,
): Promise<string> {
  const socks = new Set<Socket>();
  const srv = createServer((sock) => {
    socks.add(sock);
    sock.on('close', () => socks.delete(sock));
    let buf = '';
    sock.on('error', () => {});
    sock.on('data', (d) => {
      buf += d.toString('latin1');
      for (;;) {
        const end = buf.indexOf('\r\n\r\n');
        if (end < 0) return;
        const raw = buf.slice(0, end);
        buf = buf.slice(end + 4);
        const method = raw.split(' ')[0]!;
        const cseq = /CSeq: (\d+)/i.exec(raw)?.[1] ?? '0';
        answer(method, cseq, sock, raw);
      }
    });
  });
  await new Promise<void>((r) => srv.listen(0, '127.0.0.1', r));
  t.teardown(() => {
    for (const s of socks) s.destroy();
    srv.close();
  });
  const a = srv.address();
  return `rtsp://127.0.0.1:${typeof a === 'object' && a ? a.port : 0}/cam`;
}

const H264_SDP = [
  'v=0',
  'o=- 0 0 IN IP4 127.0.0.1',
  's=x',
  'm=video 0 RTP/AVP 96',
  'a=rtpmap:96 H264/90000',
  'a=control:trackID=0',
  '',
].join('\r\n');

function reply(sock: Socket, cseq: string, extra = '', body = ''): void {
  sock.write(
    `RTSP/1.0 200 OK\r\nCSeq: ${cseq}\r\nSession: 1;timeout=60\r\nPublic: OPTIONS, DESCRIBE, SETUP, PLAY, GET_PARAMETER\r\n${extra}${body ? `Content-Length: ${body.length}\r\n` : ''}\r\n${body}`,
  );
}

t.test('a server that stops answering keep-alives is detected within client-timeout', async (t) => {
  const pumps = new Set<NodeJS.Timeout>();
  t.teardown(() => {
    for (const p of pumps) clearInterval(p);
  });
  let keepAliveAt = 0;
  const url = await scripted(t, (method, cseq, sock) => {
    if (method === 'DESCRIBE')
      return reply(sock, cseq, 'Content-Type: application/sdp\r\n', H264_SDP);
    if (method === 'SETUP')
      return reply(sock, cseq, 'Transport: RTP/AVP/TCP;unicast;interleaved=0-1\r\n');
    if (method === 'GET_PARAMETER') {
      keepAliveAt ||= Date.now();
      return; // silence: media keeps flowing, the control channel does not answer
    }
    reply(sock, cseq);
    if (method === 'PLAY') {
      // A tiny H.264 frame (an IDR slice) every 40 ms, interleaved on channel 0.
      let seq = 0;
      const pump = setInterval(() => {
        const rtp = Buffer.alloc(14);
        rtp[0] = 0x80;
        rtp[1] = 0x80 | 96;
        rtp.writeUInt16BE(seq++ & 0xffff, 2);
        rtp.writeUInt32BE((seq * 3600) >>> 0, 4);
        rtp[12] = 0x65;
        rtp[13] = 0x88;
        sock.write(Buffer.concat([Buffer.from([0x24, 0, 0, rtp.length]), rtp]));
      }, 40);
      pumps.add(pump);
      sock.on('close', () => {
        clearInterval(pump);
        pumps.delete(pump);
      });
    }
  });
  const s = await stream(
    t,
    'rtsp-ka',
    { type: 'rtsp', uri: url, transport: 1, 'client-timeout': 2 },
    false,
  );
  // The fault shows while the input waits to reconnect; lastError keeps it after that.
  await waitFor(
    () => /keep-alive not answered/.test(String(transport(s)['lastError'] ?? '')),
    10_000,
    'keep-alive fault',
  );
  t.ok(keepAliveAt > 0, 'a keep-alive was sent');
  t.ok(
    Date.now() - keepAliveAt <= 2_500,
    `detected ${Date.now() - keepAliveAt} ms after the keep-alive`,
  );
  t.ok((transport(s)['keepAlives'] as number) >= 1);
});

t.test('a server that answers but sends no media is detected within client-timeout', async (t) => {
  let playAt = 0;
  const url = await scripted(t, (method, cseq, sock) => {
    if (method === 'DESCRIBE') {
      return reply(sock, cseq, 'Content-Type: application/sdp\r\n', H264_SDP);
    }
    if (method === 'SETUP') {
      return reply(sock, cseq, 'Transport: RTP/AVP/TCP;unicast;interleaved=0-1\r\n');
    }
    if (method === 'PLAY') playAt ||= Date.now();
    reply(sock, cseq); // keep-alives answered, no media ever
  });
  const s = await stream(
    t,
    'rtsp-silent',
    { type: 'rtsp', uri: url, transport: 1, 'client-timeout': 2 },
    false,
  );
  await waitFor(
    () => /no media from the server for 2 s/.test(String(transport(s)['lastError'] ?? '')),
    10_000,
    'no-media fault',
  );
  t.ok(Date.now() - playAt <= 2_600, `detected ${Date.now() - playAt} ms after PLAY`);
});

t.test('bad servers: 1 MB header, unknown codecs, 404 — clear faults, no crash', async (t) => {
  const huge = await scripted(t, (method, cseq, sock) => {
    if (method !== 'OPTIONS') return;
    sock.write(`RTSP/1.0 200 OK\r\nCSeq: ${cseq}\r\nX-Big: `);
    sock.write(Buffer.alloc(1024 * 1024, 0x61));
    sock.write('\r\n\r\n');
  });
  const unknown = await scripted(t, (method, cseq, sock) => {
    if (method === 'DESCRIBE') {
      const sdp =
        'v=0\r\nm=audio 0 RTP/AVP 98\r\na=rtpmap:98 OPUS/48000/2\r\nm=video 0 RTP/AVP 99\r\na=rtpmap:99 VP8/90000\r\n';
      return reply(sock, cseq, '', sdp);
    }
    reply(sock, cseq);
  });
  let describe = '';
  const missing = await scripted(t, (method, cseq, sock, raw) => {
    if (method === 'DESCRIBE') describe = raw;
    if (method === 'DESCRIBE')
      return void sock.write(`RTSP/1.0 404 Not Found\r\nCSeq: ${cseq}\r\n\r\n`);
    reply(sock, cseq);
  });
  const a = await stream(t, 'rtsp-huge', { type: 'rtsp', uri: huge, transport: 1 }, false);
  const b = await stream(t, 'rtsp-codec', { type: 'rtsp', uri: unknown, transport: 1 }, false);
  const c = await stream(
    t,
    'rtsp-404',
    { type: 'rtsp', uri: missing, transport: 1, cookies: 'k=v', 'user-agent': 'cam-puller/1' },
    false,
  );
  await waitFor(
    () => /header block over 65536/.test(String(input(a)['message'] ?? '')),
    10_000,
    'huge',
  );
  await waitFor(
    () => /codec not supported: audio OPUS, video VP8/.test(String(input(b)['message'] ?? '')),
    10_000,
    'codec',
  );
  await waitFor(() => /no such stream/.test(String(input(c)['message'] ?? '')), 10_000, '404');
  t.match(describe, /\r\nCookie: k=v\r\n/, 'cookies sent');
  t.match(describe, /\r\nUser-Agent: cam-puller\/1\r\n/, 'user-agent sent');
  t.match(describe, /\r\nAccept: application\/sdp/, 'asks for SDP');
});
