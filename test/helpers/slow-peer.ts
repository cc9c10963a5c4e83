// HTTP peers that never finish an answer, on a free loopback port: `silent` reads the request
// and never answers; `trickle` sends its headers and then one byte a second. Each request's
// connection is watched, so a test can wait for the client to let go of it (its 'close').
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import type { Teardown } from './server.ts';

export type SlowPeerMode = 'silent' | 'trickle';

/** The trickle's pace. */
export const TRICKLE_EVERY_MS = 1000;

export interface SlowPeer {
  url: string;
  /** The bodies of the requests read so far, in order. */
  bodies: string[];
  /** Resolves when the `n`-th request (from 0) was read; rejects after `withinMs`. */
  received(n: number, withinMs: number): Promise<void>;
  /** Resolves when the connection of the `n`-th request closed; rejects after `withinMs`. */
  closed(n: number, withinMs: number): Promise<void>;
  /** Connections open now. */
  open(): number;
}

interface Seen {
  read: Promise<void>;
  markRead(): void;
  closed: Promise<void>;
  markClosed(): void;
}

function seen(): Seen {
  const s = {} as Seen;
  s.read = new Promise((ok) => (s.markRead = ok));
  s.closed = new Promise((ok) => (s.markClosed = ok));
  return s;
}

function within(p: Promise<void>, ms: number, what: string): Promise<void> {
  return new Promise((ok, fail) => {
    const timer = setTimeout(() => fail(new Error(`${what}: not within ${ms} ms`)), ms);
    p.then(() => {
      clearTimeout(timer);
      ok();
    });
  });
}

/** Listen on a free loopback port until the test ends (its connections cut then); the base URL. */
export async function serveOnLoopback(t: Teardown, srv: http.Server): Promise<string> {
  await new Promise<void>((r) => srv.listen(0, '127.0.0.1', r));
  t.teardown(
    () =>
      new Promise<void>((r) => {
        srv.closeAllConnections();
        srv.close(() => r());
      }),
  );
  return `http://127.0.0.1:${(srv.address() as AddressInfo).port}`;
}

export async function startSlowPeer(
  t: Teardown,
  mode: SlowPeerMode,
  path = '/hook',
): Promise<SlowPeer> {
  const bodies: string[] = [];
  const requests: Seen[] = [];
  const at = (n: number) => {
    while (requests.length <= n) requests.push(seen());
    return requests[n]!;
  };
  let open = 0;
  const srv = http.createServer((req, res) => {
    const mine = at(bodies.length);
    bodies.push('');
    const index = bodies.length - 1;
    req.on('data', (d: Buffer) => (bodies[index] += d.toString()));
    req.socket.once('close', () => mine.markClosed());
    req.on('end', () => {
      mine.markRead();
      if (mode === 'silent') return;
      res.writeHead(200, { 'content-type': 'text/plain' });
      res.flushHeaders();
      const drip = setInterval(() => res.write('.'), TRICKLE_EVERY_MS);
      res.once('close', () => clearInterval(drip));
    });
  });
  srv.on('connection', (socket) => {
    open++;
    socket.once('close', () => open--);
  });
  const url = `${await serveOnLoopback(t, srv)}${path}`;
  return {
    url,
    bodies,
    received: (n, ms) => within(at(n).read, ms, `request ${n} to ${url}`),
    closed: (n, ms) => within(at(n).closed, ms, `the connection of request ${n} to ${url} closed`),
    open: () => open,
  };
}
