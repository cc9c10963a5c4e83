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
import { type LoopStalls, probeLoopStalls, UNSEEN_PER_TURN_MS } from '../../helpers/loop-stalls.ts';
import { waitFor } from '../../helpers/stream-host.ts';

const TRICKLE_MS = 250;
/** Bytes trickled at most (10 s): the loop is bounded whatever the client does. */
const TRICKLE_MAX = 40;
/** A forced collection at most this often (more rarely when collections are slow). */
const COLLECT_MS = 20;
/** Loop turns from a request's start to the origin seeing its socket close (connect, send,
 *  the deadline's timer, the destroy, the origin's read and close): the probe may miss part of
 *  the stalls each met. */
const TURNS = 8;

interface Trickled {
  url: string;
  /** When a `fast` path was first answered, when the origin saw each trickled request start,
   *  sent its status line and headers (unless trickled too) and saw its socket close
   *  (performance.now()). */
  answered: Map<string, number>;
  started: Map<string, number>;
  headed: Map<string, number>;
  closed: Map<string, number>;
}

/** An origin: `fast` paths answered at once, every other one trickled byte by byte (`head`
 *  false: the status line and headers at once, the body trickled). */
async function origin(
  t: Test,
  fast: Record<string, string>,
  trickle: (path: string) => { head: boolean; bytes: Buffer },
): Promise<Trickled> {
  const answered = new Map<string, number>();
  const started = new Map<string, number>();
  const headed = new Map<string, number>();
  const closed = new Map<string, number>();
  const sockets = new Set<Socket>();
  const timers = new Set<NodeJS.Timeout>();
  const srv = http.createServer((req, res) => {
    const path = req.url ?? '/';
    if (fast[path] !== undefined) {
      if (!answered.has(path)) answered.set(path, performance.now());
      return void res.end(fast[path]);
    }
    // The first request of a path is the one measured; a skipped segment is asked for again
    // when the VOD playlist loops, and trickled again (its error stays the deadline's).
    const measured = !started.has(path);
    if (measured) {
      started.set(path, performance.now());
      req.socket.once('close', () => closed.set(path, performance.now()));
    }
    const { head, bytes } = trickle(path);
    const whole = head
      ? Buffer.concat([Buffer.from('HTTP/1.1 200 OK\r\nContent-Length: 5000\r\n\r\n'), bytes])
      : bytes;
    if (!head) {
      res.writeHead(200, { 'Content-Length': 5000 }).flushHeaders();
      if (measured) headed.set(path, performance.now());
    }
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
  const url = `http://127.0.0.1:${(srv.address() as AddressInfo).port}`;
  return { url, answered, started, headed, closed };
}

/** The request to `path`, begun by the client at `begun` or later, was abandoned at its `ms`
 *  deadline: not before (the timers' clock counts whole ms: 1 ms less), and no later than the
 *  deadline plus the stalls the probe saw meanwhile and what it may miss of them. */
async function abandoned(
  t: Test,
  o: Trickled,
  stalls: LoopStalls,
  path: string,
  ms: number,
  whenBegun: () => number,
): Promise<void> {
  // Past the origin's whole trickle the client's idle time-out ends the request anyway.
  await waitFor(() => o.closed.has(path), ms + TRICKLE_MAX * TRICKLE_MS, `${path} abandoned`);
  await stalls.next();
  const closed = o.closed.get(path)!;
  const begun = whenBegun();
  const took = Math.round(closed - begun);
  const late = Math.round(stalls.between(begun, closed));
  t.ok(took >= ms - 1, `${path}: not abandoned before its deadline (${took} ms)`);
  t.ok(
    took <= ms + late + TURNS * UNSEEN_PER_TURN_MS,
    `${path}: closed ${took} ms after the client began it (the loop held up ${late} ms)`,
  );
}

const PLAYLIST = '#EXTM3U\n#EXT-X-TARGETDURATION:1\n#EXTINF:0.25,\nseg.ts\n#EXT-X-ENDLIST\n';

t.test('a trickled playlist: the request ends at client-timeout (plain http)', async (t) => {
  collectAlways(t, COLLECT_MS);
  const stalls = probeLoopStalls(t);
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
  const begun = performance.now();
  const err = await c.get(`${o.url}/a.m3u8`, { maxBytes: 1 << 20 }).catch((e: Error) => e);
  t.match(err, { message: /^origin did not finish its answer in 1 s \(http:.*\/a\.m3u8\)$/ });
  await abandoned(t, o, stalls, '/a.m3u8', 1000, () => begun);
});

t.test('the hls input: playlist, segment, mode 0 and progressive head', async (t) => {
  collectAlways(t, COLLECT_MS);
  const stalls = probeLoopStalls(t);
  const ts = Buffer.alloc(188 * 4, 0xff);
  for (let i = 0; i < ts.length; i += 188) ts[i] = 0x47;
  const o = await origin(t, { '/ok.m3u8': PLAYLIST }, (path) =>
    path === '/head.ts'
      ? { head: true, bytes: ts }
      : { head: false, bytes: path.endsWith('.ts') ? ts : Buffer.from(PLAYLIST) },
  );
  /** An input started; its first request's deadline begins within `start()`. */
  const begun = new Map<string, number>();
  const run = (path: string, mode: number) => {
    const inp = new HlsInput({ 'client-timeout': 1, uri: `${o.url}${path}`, mode }, inputContext());
    begun.set(path, performance.now());
    inp.start();
    t.teardown(() => inp.close());
    return inp;
  };
  const playlist = run('/slow.m3u8', 1);
  const segment = run('/ok.m3u8', 1);
  const detect = run('/detect.m3u8', 0);
  const head = run('/head.ts', 2);
  const first = (path: string) => () => begun.get(path)!;
  await abandoned(t, o, stalls, '/slow.m3u8', 1000, first('/slow.m3u8'));
  // The segment is asked for once its playlist came back: not before the origin answered it.
  await abandoned(t, o, stalls, '/seg.ts', 1000, () => o.answered.get('/ok.m3u8')!);
  await abandoned(t, o, stalls, '/detect.m3u8', 1000, first('/detect.m3u8'));
  await abandoned(t, o, stalls, '/head.ts', 1000, first('/head.ts'));
  await waitFor(() => playlist.fault() !== '', 5_000, 'playlist fault');
  t.match(playlist.fault(), /origin did not finish its answer in 1 s/);
  await waitFor(() => segment.status()['lastError'] !== undefined, 5_000, 'segment error');
  t.match(
    segment.status()['lastError'],
    /^segment 0: origin did not finish its answer in 1 s \(http:.*\/seg\.ts\); skipped$/,
  );
  // The headers reach the client's socket at once; it reads them unless its loop has not
  // turned from then to the deadline (a starved process): then it rightly saw no answer.
  const seen = stalls.polledBetween(
    o.headed.get('/detect.m3u8')!,
    begun.get('/detect.m3u8')! + 1000,
  );
  t.match(
    detect.status()['lastError'],
    seen ? /origin did not finish its answer in 1 s/ : /^no answer from origin in 1 s/,
    `mode 0: ${seen ? 'the answer began' : 'no loop turn to read the answer'} before the deadline`,
  );
  t.match(head.status()['lastError'], /no answer from origin in 1 s|did not finish/);
});

t.test('a progressive body paced by the origin is kept (idle time-out only)', async (t) => {
  collectAlways(t, COLLECT_MS);
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
