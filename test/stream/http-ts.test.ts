// HTTP-TS delivery: a client joining mid-stream gets PAT, then PMT, then a video random access
// point (an H.264 key frame ffprobe decodes first) — not an audio access point, which ffmpeg
// also flags; and a client that stops reading is dropped after the bounded backlog while a
// second client keeps receiving every byte at the producer's rate.
import { spawnSync } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import http from 'node:http';
import net from 'node:net';
import { join } from 'node:path';
import Fastify from 'fastify';
import t from 'tap';
import { StreamDriver } from '../../src/drivers/stream/driver.ts';
import type { StreamInstance } from '../../src/drivers/stream/instance.ts';
import { payloadOffset, pid, pusi, randomAccess, TS_PACKET_SIZE } from '../../src/mpegts/packet.ts';
import { HttpTsFanout } from '../../src/ott/http-ts.ts';
import {
  freePort,
  httpFor,
  makeFixture,
  makeHost,
  playFixture,
  streamResource,
  tempDir,
  waitFor,
} from '../helpers/stream-host.ts';

const VIDEO = 0x100;
const PMT = 0x1000; // ffmpeg's default PMT PID
/** ~0.37 s of the fixture (~444 packets/s): consecutive clients join at different GOP points. */
const JOIN_STEP_BYTES = 165 * 188;

/** Read `bytes` from a URL (or what came within `ms`). */
async function readFirst(url: string, bytes: number, ms: number): Promise<Buffer> {
  return new Promise((resolve, reject) => {
    const got: Buffer[] = [];
    let n = 0;
    const req = http.get(url, (res) => {
      res.on('data', (d: Buffer) => {
        got.push(d);
        n += d.length;
        if (n >= bytes) finish();
      });
    });
    const finish = () => {
      clearTimeout(timer);
      req.destroy();
      resolve(Buffer.concat(got));
    };
    const timer = setTimeout(finish, ms);
    req.on('error', (e) => (n >= bytes ? undefined : reject(e)));
  });
}

t.test('a new client starts with PAT, PMT, then a video key frame', async (t) => {
  const dir = tempDir(t);
  const fixture = makeFixture(dir);
  const host = makeHost(dir);
  const base = await httpFor(t, host.router);
  const port = await freePort();
  playFixture(t, fixture, 'mpegts', `udp://127.0.0.1:${port}?pkt_size=1316`);
  const s = (await new StreamDriver().create(
    streamResource({ 'stream-name': 'start', input: [{ type: 'udp', port }] }),
    host,
  )) as StreamInstance;
  t.teardown(() => s.close());
  await waitFor(() => s.state() === 'running', 5000, 'running');
  const taken = () =>
    Number((s.status()['inputs'] as { transport: { bytes: number } }[])[0]!.transport.bytes);
  for (let k = 0; k < 3; k++) {
    // Join at different points of the GOP (the fixture has a key frame every second): after
    // ~0.37 s more of the stream each time.
    const from = taken();
    await waitFor(() => taken() >= from + JOIN_STEP_BYTES, 5000, `client ${k}'s join point`);
    const b = await readFirst(`${base}/start/mpegts`, 256 * 1024, 4000);
    t.ok(b.length >= 3 * TS_PACKET_SIZE, `client ${k} got ${b.length} bytes`);
    const pk = (i: number) => b.subarray(i * TS_PACKET_SIZE, (i + 1) * TS_PACKET_SIZE);
    t.equal(pid(pk(0)), 0, `client ${k}: first packet is the PAT`);
    t.ok(pusi(pk(0)), 'with a section start');
    t.equal(pid(pk(1)), PMT, `client ${k}: then the PMT`);
    const third = pk(2);
    t.equal(pid(third), VIDEO, `client ${k}: then video, not audio (PID ${pid(third)})`);
    t.ok(pusi(third) && randomAccess(third), 'a PES start flagged random access');
    // The PES holds an H.264 IDR slice (NAL type 5) or the SPS before it (7).
    const pes = third.subarray(payloadOffset(third));
    const es = pes.subarray(9 + pes[8]!);
    const nals: number[] = [];
    for (let i = 0; i + 3 < es.length; i++) {
      if (es[i] === 0 && es[i + 1] === 0 && es[i + 2] === 1) nals.push(es[i + 3]! & 0x1f);
    }
    t.ok(nals.includes(7) || nals.includes(5), `key-frame NAL units at the start: ${nals}`);
    const file = join(dir, `start-${k}.ts`);
    writeFileSync(file, b);
    const p = spawnSync('ffprobe', [
      '-v',
      'error',
      '-select_streams',
      'v',
      '-show_entries',
      'frame=key_frame,pict_type',
      '-read_intervals',
      '%+#1',
      '-of',
      'csv=p=0',
      file,
    ]);
    t.equal(
      p.stdout.toString().trim().split('\n')[0]?.replace(/,+$/, ''),
      '1,I',
      'ffprobe: first frame is a key frame',
    );
  }
});

t.test('a client that stops reading is dropped; the other keeps full rate', async (t) => {
  const MAX = 1024 * 1024;
  const fan = new HttpTsFanout(MAX);
  const app = Fastify();
  app.get('/x/mpegts', (_req, reply) => {
    fan.serve(reply);
  });
  await app.listen({ port: 0, host: '127.0.0.1' });
  t.teardown(() => {
    fan.closeAll();
    return app.close();
  });
  const addr = app.server.address() as net.AddressInfo;

  // Fast client: counts every byte.
  let fastBytes = 0;
  const fast = http.get(`http://127.0.0.1:${addr.port}/x/mpegts`, (res) =>
    res.on('data', (d: Buffer) => {
      fastBytes += d.length;
    }),
  );
  fast.on('error', () => undefined);
  t.teardown(() => fast.destroy());
  // Slow client: sends its request and never reads a byte.
  const slow = net.connect(addr.port, '127.0.0.1');
  slow.pause();
  slow.write('GET /x/mpegts HTTP/1.1\r\nHost: x\r\n\r\n');
  let slowClosed = false;
  let slowBytes = 0;
  slow.on('data', (d: Buffer) => {
    slowBytes += d.length;
  });
  slow.on('close', () => {
    slowClosed = true;
  });
  slow.on('error', () => undefined);
  t.teardown(() => slow.destroy());
  await waitFor(() => fan.stats().clients === 2, 3000, 'both clients connected');

  // ~100 Mbit/s of aligned packets for 2.5 s: 64 KB every 5 ms.
  const chunk = Buffer.alloc(348 * TS_PACKET_SIZE);
  for (let o = 0; o < chunk.length; o += TS_PACKET_SIZE) {
    chunk[o] = 0x47;
    chunk[o + 1] = 0x01;
    chunk[o + 3] = 0x10;
  }
  let pushed = 0;
  let droppedAt = -1;
  const t0 = Date.now();
  await new Promise<void>((resolve) => {
    const timer = setInterval(() => {
      fan.packets(chunk);
      pushed += chunk.length;
      if (droppedAt < 0 && fan.stats().dropped > 0) droppedAt = pushed;
      if (Date.now() - t0 >= 2500) {
        clearInterval(timer);
        resolve();
      }
    }, 5);
  });
  const elapsed = (Date.now() - t0) / 1000;
  await waitFor(() => fastBytes >= pushed, 5000, 'the fast client drained');
  t.equal(fan.stats().dropped, 1, 'exactly one client dropped');
  t.ok(droppedAt > 0, `slow client dropped after ${droppedAt} bytes were pushed`);
  slow.resume(); // read what the kernel still holds: then the server's close shows
  await waitFor(() => slowClosed, 3000, 'slow socket closed by the server');
  t.ok(slowBytes < pushed / 2, `the slow client got only ${slowBytes} of ${pushed} bytes`);
  t.equal(fan.stats().clients, 1, 'the fast client stays');
  t.equal(fastBytes, pushed, `the fast client got every byte (${pushed})`);
  const mbps = (pushed * 8) / elapsed / 1e6;
  t.ok(mbps > 50, `producer ran at ${mbps.toFixed(0)} Mbit/s, not slowed by the stuck client`);
});

t.test('the status line goes out before the stream has any output', async (t) => {
  const fan = new HttpTsFanout();
  const app = Fastify();
  app.get('/x/mpegts', (_req, reply) => {
    fan.serve(reply);
  });
  await app.listen({ port: 0, host: '127.0.0.1' });
  t.teardown(() => {
    fan.closeAll();
    return app.close();
  });
  const { port } = app.server.address() as net.AddressInfo;
  const res = await new Promise<http.IncomingMessage>((resolve, reject) => {
    const req = http.get(`http://127.0.0.1:${port}/x/mpegts`, resolve);
    req.on('error', reject);
    req.setTimeout(2000, () => reject(new Error('no response headers within 2 s')));
    t.teardown(() => req.destroy());
  });
  t.equal(res.statusCode, 200);
  t.equal(res.headers['content-type'], 'video/mp2t');
});
