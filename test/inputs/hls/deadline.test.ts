// Hard deadlines of the hls input's requests against an origin that trickles one byte every
// 250 ms (an idle time-out never fires on it), with the collector forced all along: a
// playlist, a key-less segment, a mode 0 answer and a progressive head are each abandoned at
// their deadline — the socket closed — while a progressive body paced by the origin is not.
import http from 'node:http';
import type { AddressInfo, Socket } from 'node:net';
import t, { type Test } from 'tap';
import { HttpClient } from '../../../src/inputs/hls/http.ts';
import { HlsInput } from '../../../src/inputs/hls/input.ts';
import { collectAlways, inputContext } from '../../helpers/input-ctx.ts';
import { waitFor } from '../../helpers/stream-host.ts';

const TRICKLE_MS = 250;
/** Bytes trickled at most (10 s): the loop is bounded whatever the client does. */
const TRICKLE_MAX = 40;

interface Trickled {
  url: string;
  /** When the origin saw each trickled request start, and its socket close. */
  started: Map<string, number>;
  closed: Map<string, number>;
}

/** An origin: `fast` paths answered at once, every other one trickled byte by byte (`head`
 *  false: the status line and headers at once, the body trickled). */
async function origin(
  t: Test,
  fast: Record<string, string>,
  trickle: (path: string) => { head: boolean; bytes: Buffer },
): Promise<Trickled> {
  const started = new Map<string, number>();
  const closed = new Map<string, number>();
  const sockets = new Set<Socket>();
  const timers = new Set<NodeJS.Timeout>();
  const srv = http.createServer((req, res) => {
    const path = req.url ?? '/';
    if (fast[path] !== undefined) return void res.end(fast[path]);
    // The first request of a path is the one measured (a skipped segment is asked for again
    // when the VOD playlist loops).
    if (started.has(path)) return void res.destroy();
    started.set(path, Date.now());
    req.socket.once('close', () => closed.set(path, Date.now()));
    const { head, bytes } = trickle(path);
    const whole = head
      ? Buffer.concat([Buffer.from('HTTP/1.1 200 OK\r\nContent-Length: 5000\r\n\r\n'), bytes])
      : bytes;
    if (!head) res.writeHead(200, { 'Content-Length': 5000 }).flushHeaders();
    let i = 0;
    const tick = setInterval(() => {
      if (i >= TRICKLE_MAX || i >= whole.length || req.socket.destroyed) {
        clearInterval(tick);
        return;
      }
      req.socket.write(whole.subarray(i, ++i));
    }, TRICKLE_MS);
    timers.add(tick);
  });
  srv.on('connection', (s) => sockets.add(s));
  await new Promise<void>((r) => srv.listen(0, '127.0.0.1', r));
  t.teardown(() => {
    for (const x of timers) clearInterval(x);
    for (const s of sockets) s.destroy();
    return new Promise<void>((r) => srv.close(() => r()));
  });
  return { url: `http://127.0.0.1:${(srv.address() as AddressInfo).port}`, started, closed };
}

/** The request to `path` was abandoned about `ms` after it started (socket closed). The
 *  origin sees a request some time after the client sent it and started its deadline (as long
 *  as a loaded machine, and the forced collections, hold the event loop): hence the low bound. */
async function abandoned(t: Test, o: Trickled, path: string, ms: number): Promise<void> {
  await waitFor(() => o.closed.has(path), ms + 5_000, `${path} abandoned`);
  const took = o.closed.get(path)! - o.started.get(path)!;
  t.ok(took >= ms / 2 && took <= ms + 1_500, `${path}: closed ${took} ms after it began`);
}

const PLAYLIST = '#EXTM3U\n#EXT-X-TARGETDURATION:1\n#EXTINF:0.25,\nseg.ts\n#EXT-X-ENDLIST\n';

t.test('a trickled playlist: the request ends at client-timeout (plain http)', async (t) => {
  collectAlways(t, 20);
  const o = await origin(t, {}, () => ({ head: false, bytes: Buffer.from(PLAYLIST) }));
  const c = new HttpClient({
    userAgent: '',
    cookies: '',
    login: '',
    password: '',
    timeoutMs: 1000,
    maxSockets: 1,
  });
  t.teardown(() => c.close());
  const err = await c.get(`${o.url}/a.m3u8`, { maxBytes: 1 << 20 }).catch((e: Error) => e);
  t.match(err, { message: /^origin did not finish its answer in 1 s \(http:.*\/a\.m3u8\)$/ });
  await abandoned(t, o, '/a.m3u8', 1000);
});

t.test('the hls input: playlist, segment, mode 0 and progressive head', async (t) => {
  collectAlways(t, 20);
  const ts = Buffer.alloc(188 * 4, 0xff);
  for (let i = 0; i < ts.length; i += 188) ts[i] = 0x47;
  const o = await origin(t, { '/ok.m3u8': PLAYLIST }, (path) =>
    path === '/head.ts'
      ? { head: true, bytes: ts }
      : { head: false, bytes: path.endsWith('.ts') ? ts : Buffer.from(PLAYLIST) },
  );
  const run = (cfg: Record<string, unknown>) => {
    const inp = new HlsInput({ 'client-timeout': 1, ...cfg }, inputContext());
    inp.start();
    t.teardown(() => inp.close());
    return inp;
  };
  const playlist = run({ uri: `${o.url}/slow.m3u8`, mode: 1 });
  const segment = run({ uri: `${o.url}/ok.m3u8`, mode: 1 });
  const detect = run({ uri: `${o.url}/detect.m3u8`, mode: 0 });
  const head = run({ uri: `${o.url}/head.ts`, mode: 2 });
  await abandoned(t, o, '/slow.m3u8', 1000);
  await abandoned(t, o, '/seg.ts', 1000);
  await abandoned(t, o, '/detect.m3u8', 1000);
  await abandoned(t, o, '/head.ts', 1000);
  await waitFor(() => playlist.fault() !== '', 5_000, 'playlist fault');
  t.match(playlist.fault(), /origin did not finish its answer in 1 s/);
  await waitFor(() => segment.status()['lastError'] !== undefined, 5_000, 'segment error');
  t.match(
    segment.status()['lastError'],
    /^segment 0: origin did not finish its answer in 1 s \(http:.*\/seg\.ts\); skipped$/,
  );
  t.match(detect.status()['lastError'], /origin did not finish its answer in 1 s/);
  t.match(head.status()['lastError'], /no answer from origin in 1 s|did not finish/);
});

t.test('a progressive body paced by the origin is kept (idle time-out only)', async (t) => {
  collectAlways(t, 20);
  const ts = Buffer.alloc(188 * 40, 0xff);
  for (let i = 0; i < ts.length; i += 188) ts[i] = 0x47;
  const o = await origin(t, {}, () => ({ head: false, bytes: ts }));
  const got = { bytes: 0, discontinuities: [] as string[] };
  const inp = new HlsInput(
    { uri: `${o.url}/live.ts`, mode: 2, 'client-timeout': 1 },
    inputContext(got),
  );
  inp.start();
  t.teardown(() => inp.close());
  await waitFor(() => got.bytes >= 12, 10_000, 'bytes trickled in past the deadline');
  t.notOk(o.closed.has('/live.ts'), 'still connected after 3 s of a body paced at 4 bytes/s');
});
