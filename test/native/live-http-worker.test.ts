// The native live engine fed from a worker thread (issue 37): a real Worker publishes into the
// main thread's engine by share id; node:http (keep-alive) and curl get its segment and
// playlist through the main thread's listener with no JavaScript route hit; a replaced body's
// release arrives in the worker; a worker terminated while a slow client holds its large body
// cuts that response, nothing crashes, and its keys are gone (the app's 404 afterwards).
import { execFile } from 'node:child_process';
import http from 'node:http';
import { connect } from 'node:net';
import { Worker } from 'node:worker_threads';
import t from 'tap';
import { LiveDelivery } from '../../src/native/live-http.ts';
import type { FromPublishWorker, ToPublishWorker } from '../helpers/live-publish-worker.ts';

const CHILD = new URL('../helpers/live-publish-worker.ts', import.meta.url).href;
const TSX = import.meta.resolve('tsx/esm/api');
// As src/plane/pool.ts starts its workers: tsx registered in the worker, then the module.
const BOOT = `const { workerData } = require('node:worker_threads');
import(workerData.tsx).then((m) => { m.register(); return import(workerData.entry); });`;

class PublishWorker {
  readonly worker: Worker;
  readonly released: { tag: string; threadId: number }[] = [];
  private waiters: (() => void)[] = [];
  private done: FromPublishWorker[] = [];

  constructor(shareId: number) {
    this.worker = new Worker(BOOT, { eval: true, workerData: { shareId, tsx: TSX, entry: CHILD } });
    this.worker.on('message', (m: FromPublishWorker) => {
      if (m.ev === 'released') this.released.push({ tag: m.tag, threadId: m.threadId });
      else this.done.push(m);
      for (const w of this.waiters.splice(0)) w();
    });
  }

  /** Sends one command and waits for the worker to have carried it out. */
  async ask(m: ToPublishWorker): Promise<FromPublishWorker> {
    this.worker.postMessage(m);
    for (;;) {
      const d = this.done.shift();
      if (d) return d;
      await new Promise<void>((r) => this.waiters.push(r));
    }
  }

  async releasedTag(tag: string): Promise<{ tag: string; threadId: number }> {
    for (;;) {
      const r = this.released.find((x) => x.tag === tag);
      if (r) return r;
      await new Promise<void>((res) => this.waiters.push(res));
    }
  }
}

async function setup(t: { teardown(fn: () => unknown): void }) {
  const delivery = new LiveDelivery();
  const seen: string[] = [];
  const server = http.createServer((req, res) => {
    seen.push(`${req.method} ${req.url}`);
    res.writeHead(404, { 'Content-Length': 0 });
    res.end();
  });
  const detach = delivery.attach(server);
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  const port = (server.address() as { port: number }).port;
  const agent = new http.Agent({ keepAlive: true, maxSockets: 1 });
  const workers: PublishWorker[] = [];
  t.teardown(async () => {
    for (const w of workers) await w.worker.terminate();
    agent.destroy();
    detach();
    delivery.close();
    server.closeAllConnections();
    await new Promise((r) => server.close(r));
  });
  /** `fresh`: on a new connection (one the engine gave back to Node stays with Node). */
  const get = (path: string, fresh = false) =>
    new Promise<{ status: number; body: Buffer; socket: unknown }>((resolve, reject) => {
      const req = http.get(
        { port, host: '127.0.0.1', path, agent: fresh ? false : agent },
        (res) => {
          const chunks: Buffer[] = [];
          res.on('data', (c: Buffer) => chunks.push(c));
          res.on('end', () =>
            resolve({ status: res.statusCode!, body: Buffer.concat(chunks), socket: req.socket }),
          );
        },
      );
      req.on('error', reject);
    });
  const worker = () => {
    const w = new PublishWorker(delivery.shareId);
    workers.push(w);
    return w;
  };
  return { delivery, seen, port, get, worker };
}

const PLAYLIST =
  '#EXTM3U\n#EXT-X-VERSION:3\n#EXT-X-TARGETDURATION:2\n#EXT-X-MEDIA-SEQUENCE:1\n#EXTINF:2.000,\nseg-1.ts\n';

t.test('a worker publishes; the main thread’s listener answers natively', async (t) => {
  const s = await setup(t);
  const w = s.worker();
  await w.ask({
    op: 'publish',
    key: '/w/seg-1.ts',
    tag: 'seg v1',
    type: 'video/mp2t',
    size: 188 * 700,
    fill: 0x47,
  });
  await w.ask({
    op: 'publish',
    key: '/w/index.m3u8',
    tag: 'playlist',
    type: 'application/vnd.apple.mpegurl',
    text: PLAYLIST,
  });
  t.equal(s.delivery.stats().entries, 2, 'both in the engine’s table');

  const a = await s.get('/w/seg-1.ts');
  const b = await s.get('/w/index.m3u8');
  const c = await s.get('/w/seg-1.ts');
  t.equal(a.status, 200);
  t.ok(a.body.equals(Buffer.alloc(188 * 700, 0x47)), 'the segment, from the worker’s buffer');
  t.equal(b.body.toString(), PLAYLIST, 'the playlist');
  t.ok(c.body.equals(a.body));
  t.equal(a.socket, c.socket, 'one keep-alive connection');

  // curl: the playlist, then the segment it names, on one connection.
  const base = `http://127.0.0.1:${s.port}/w/`;
  const out = await new Promise<Buffer>((resolve, reject) =>
    execFile(
      'curl',
      ['-sf', `${base}index.m3u8`, `${base}seg-1.ts`],
      { encoding: 'buffer', maxBuffer: 1 << 22 },
      (e, o) => (e ? reject(e) : resolve(o)),
    ),
  );
  t.ok(out.equals(Buffer.concat([Buffer.from(PLAYLIST), a.body])), 'curl read both');
  t.same(s.seen, [], 'no JavaScript route saw any of them');
  t.equal(s.delivery.stats().served, 5, 'the engine counted every response');

  // Gated: a viewer pass granted on the main thread lets a worker's segment go out natively.
  s.delivery.setGated(true);
  s.delivery.grant('token=1', '127.0.0.1', 'w', 60_000);
  await w.ask({
    op: 'publish',
    key: '/w/seg-2.ts',
    tag: 'seg2',
    type: 'video/mp2t',
    size: 1000,
    fill: 1,
    passes: true,
  });
  const g = await s.get('/w/seg-2.ts?token=1');
  t.equal(g.status, 200);
  const use = s.delivery.takePassUse();
  t.same(
    use.map((u) => [u.stream, u.requests]),
    [['w', 1]],
    'the pass use is counted',
  );
  t.equal((await s.get('/w/seg-2.ts')).status, 404, 'gated, no pass: the app answers');
  s.delivery.setGated(false);

  // Replacing the segment: the old body is released in the worker, not here.
  t.same(w.released, []);
  await w.ask({
    op: 'publish',
    key: '/w/seg-1.ts',
    tag: 'seg v2',
    type: 'video/mp2t',
    size: 188,
    fill: 0x48,
  });
  const r = await w.releasedTag('seg v1');
  t.equal(r.threadId, w.worker.threadId, 'released on the worker’s thread');
  t.ok((await s.get('/w/seg-1.ts', true)).body.equals(Buffer.alloc(188, 0x48)), 'the new body');

  t.equal((await w.ask({ op: 'unpublish', key: '/w/index.m3u8' })).ev, 'done');
  await w.releasedTag('playlist');
  t.equal((await s.get('/w/index.m3u8', true)).status, 404, 'unpublished: the app answers');
  t.same(s.seen, ['GET /w/seg-2.ts', 'GET /w/index.m3u8'], 'the app saw only those two');

  // close(): the worker's keys leave the table and every body it still held is released there.
  await w.ask({ op: 'close', key: '' });
  t.equal(s.delivery.stats().entries, 0);
  t.same((await w.releasedTag('seg v2')).threadId, w.worker.threadId);
  await w.releasedTag('seg2');
  t.equal((await s.get('/w/seg-1.ts', true)).status, 404, 'closed: the app answers');
});

t.test('a worker terminated mid-response: the response is cut, its keys are gone', async (t) => {
  const s = await setup(t);
  const size = 48 << 20;
  for (let round = 1; round <= 2; round++) {
    const w = s.worker();
    await w.ask({
      op: 'publish',
      key: '/w/big.ts',
      tag: 'big',
      type: 'video/mp2t',
      size,
      fill: 0x47,
    });
    await w.ask({
      op: 'publish',
      key: '/w/small.ts',
      tag: 'small',
      type: 'video/mp2t',
      size: 188,
      fill: 0x47,
    });
    // A slow client: reads the first bytes, then stops reading with most of the body unsent.
    const sock = connect(s.port, '127.0.0.1');
    const chunks: Buffer[] = [];
    let gotFirst: () => void;
    const first = new Promise<void>((r) => (gotFirst = r));
    let slow = true;
    sock.on('data', (d: Buffer) => {
      chunks.push(d);
      if (!slow) return;
      sock.pause();
      gotFirst();
    });
    const ended = new Promise<void>((r) => sock.on('close', () => r()));
    sock.on('error', () => {});
    sock.write('GET /w/big.ts HTTP/1.1\r\nHost: x\r\n\r\n');
    await first;
    await w.worker.terminate();
    slow = false; // reading again: the engine finds the body's thread gone
    sock.resume();
    await ended;
    const got = Buffer.concat(chunks);
    const bodyAt = got.indexOf('\r\n\r\n') + 4;
    t.ok(got.length - bodyAt < size, `round ${round}: the response was cut`);
    t.ok(
      got.subarray(bodyAt).every((b) => b === 0x47),
      'only the body’s bytes went out',
    );
    t.equal(s.delivery.stats().cut, round, 'cut by the engine: the body’s thread was gone');
    t.equal(s.delivery.stats().entries, 0, 'the worker’s keys left the table');
    t.equal((await s.get('/w/big.ts', true)).status, 404, 'the app answers its keys');
    t.equal((await s.get('/w/small.ts', true)).status, 404);
  }
});

t.test('the main thread closes the engine while a worker holds a handle', async (t) => {
  const s = await setup(t);
  const w = s.worker();
  await w.ask({ op: 'publish', key: '/w/a.ts', tag: 'a', type: 'video/mp2t', size: 1000, fill: 1 });
  t.equal((await s.get('/w/a.ts')).status, 200);
  s.delivery.close();
  t.equal((await w.releasedTag('a')).threadId, w.worker.threadId, 'its body released there');
  const again = await w.ask({
    op: 'publish',
    key: '/w/b.ts',
    tag: 'b',
    type: 'video/mp2t',
    size: 10,
  });
  t.match(again, { error: /live engine was closed/ }, 'a later publish says the engine is closed');
  t.equal(w.released.length, 1, 'no release for the refused body');
});
