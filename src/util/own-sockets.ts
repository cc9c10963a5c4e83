// The TCP connections this process opened as a client, found by their local port, so that a
// server of ours can tell a request sluice sent itself (an input's fetch, a webhook, a redirect
// it followed) from a local tool's: only a tool's is anonymous loopback (docs/api.md).
import net from 'node:net';
import { type Clock, systemClock } from './clock.ts';

/** A connection's two ends as node:net reports them (a Socket is one). */
export interface Endpoints {
  readonly localAddress?: string | undefined;
  readonly localPort?: number | undefined;
  readonly remoteAddress?: string | undefined;
  readonly remotePort?: number | undefined;
}

/** How long a closed client connection is still known: bytes it sent before closing may be
 *  read by our server later (the two ends run on one event loop, the server's turn can come
 *  after the client's close). */
export const CLOSED_KEPT_MS = 10_000;

interface OwnConnection {
  localAddress: string;
  localPort: number;
  remoteAddress: string;
  remotePort: number;
  /** Monotonic ms of the close; undefined while open. */
  closedAt?: number;
}

/** Live (and lately closed) client connections by local port: several may share a port when
 *  their far ends differ. */
const byLocalPort = new Map<number, OwnConnection[]>();
/** Closed connections in order of closing, so the oldest are dropped first. */
const closedOrder = new Set<OwnConnection>();
let clock: Clock | undefined;

/** An IPv4 address as an IPv4 socket reports it (`::ffff:127.0.0.1` → `127.0.0.1`). */
function plain(address: string | undefined): string {
  if (address === undefined) return '';
  return address.startsWith('::ffff:') ? address.slice(7) : address;
}

function expired(c: OwnConnection, now: number): boolean {
  return c.closedAt !== undefined && now - c.closedAt >= CLOSED_KEPT_MS;
}

function forget(c: OwnConnection): void {
  closedOrder.delete(c);
  const list = byLocalPort.get(c.localPort);
  if (!list) return;
  const i = list.indexOf(c);
  if (i >= 0) list.splice(i, 1);
  if (list.length === 0) byLocalPort.delete(c.localPort);
}

function sweep(now: number): void {
  for (const c of closedOrder) {
    if (!expired(c, now)) return;
    forget(c);
  }
}

/** Note a client socket once it is connected; the listener goes first, before any byte is sent
 *  (writes queued before the connection wait for this same event). */
function watch(socket: net.Socket, clk: Clock): void {
  socket.prependOnceListener('connect', () => {
    const port = socket.localPort;
    const remotePort = socket.remotePort;
    if (port === undefined || remotePort === undefined) return; // not TCP
    const own: OwnConnection = {
      localAddress: plain(socket.localAddress),
      localPort: port,
      remoteAddress: plain(socket.remoteAddress),
      remotePort,
    };
    const list = byLocalPort.get(port);
    if (list) list.push(own);
    else byLocalPort.set(port, [own]);
    socket.once('close', () => {
      const now = clk.monotonic();
      own.closedAt = now;
      closedOrder.add(own);
      sweep(now);
    });
  });
}

/**
 * From now on, know every TCP client connection this process opens. Every JavaScript client
 * connects through net.Socket's connect: net.connect, tls.connect, http(s) and http2 agents,
 * undici's fetch, the etcd and ACME clients, the inputs' own sockets. (The diagnostics channel
 * `net.client.socket` would miss tls.connect and `new Socket().connect()` on Node 20.)
 * Call once at start-up, before anything connects; later calls do nothing.
 */
export function trackOwnClientSockets(clk: Clock = systemClock): void {
  if (clock) return;
  clock = clk;
  const connect = net.Socket.prototype.connect;
  net.Socket.prototype.connect = function (this: net.Socket, ...args: unknown[]) {
    watch(this, clk);
    return (connect as (...a: unknown[]) => net.Socket).apply(this, args);
  } as typeof connect;
}

/** True when `conn`, a connection our server accepted, is one this process opened as a client. */
export function fromOwnClient(conn: Endpoints): boolean {
  if (!clock || conn.remotePort === undefined) return false;
  const list = byLocalPort.get(conn.remotePort);
  if (!list) return false;
  const now = clock.monotonic();
  const peer = plain(conn.remoteAddress);
  const local = plain(conn.localAddress);
  return list.some(
    (c) =>
      c.localAddress === peer &&
      c.remoteAddress === local &&
      c.remotePort === conn.localPort &&
      !expired(c, now),
  );
}

/** Connections known at the moment (open or lately closed), for tests and status. */
export function ownClientCount(): number {
  let n = 0;
  for (const list of byLocalPort.values()) n += list.length;
  return n;
}
