// LiveDelivery: the façade over the native live HTTP engine (native/net/live_http.cc). Plain
// HTTP listeners hand every new connection to it; it answers keep-alive GETs of published live
// responses (HLS-TS segments and playlists) from its own thread and gives a connection back to
// the listener, unread, at the first request it does not answer exactly as the JavaScript path
// would. Worker threads publish into the same engine through `LiveDelivery.attach(shareId)`.
// Design and limits: docs/ott.md, "Native live delivery".
import { closeSync } from 'node:fs';
import type { Server } from 'node:http';
import { Socket } from 'node:net';
import {
  addon,
  type NativeLiveHttp,
  type NativeLivePublisher,
  type RawLiveHttpStats,
} from './addon.ts';
import { argError } from './errors.ts';

/** A viewer pass's use since it was last read: native responses and their bytes. */
export interface PassUse {
  query: string;
  ip: string;
  stream: string;
  requests: number;
  bytes: number;
}

export type LiveDeliveryStats = RawLiveHttpStats;

export interface LiveDeliveryOptions {
  /** Idle time after a response before a connection is closed (the HTTP server's keep-alive
   *  timeout, also sent as `Keep-Alive: timeout=`). Default 5000, Node's. */
  keepAliveMs?: number;
  /** A response that makes no progress this long is dropped with its connection. Default 60 s. */
  stallMs?: number;
  /** Faults of the event handler (a handed-back socket that cannot be rebuilt, …). */
  onError?: (err: Error) => void;
}

type ConnectionListener = (this: Server, socket: Socket) => void;

interface Attached {
  server: Server;
  listeners: ConnectionListener[];
}

/** What a stream needs to publish its live responses, on the main thread or in a worker. */
export interface LivePublishing {
  publish(
    key: string,
    head: Buffer,
    body: Buffer,
    release?: () => void,
    fromZeroHead?: Buffer,
    forPassHolders?: boolean,
  ): void;
  unpublish(key: string): boolean;
}

/** Published bodies the native side may still be sending, by release id: kept reachable (so
 *  their memory stays valid) until the engine says it is done with them. */
class HeldBodies {
  private held = new Map<number, { body: Buffer; release?: () => void }>();
  private nextId = 1;

  constructor(private readonly onError: (err: Error) => void) {}

  /** Hold `body` under a new id while `send` hands that id to the engine; a body the engine
   *  refuses (send throws) is never released by it, so it is not held. */
  hold(body: Buffer, release: (() => void) | undefined, send: (id: number) => void): void {
    const id = this.nextId++;
    this.held.set(id, { body, release });
    try {
      send(id);
    } catch (e) {
      this.held.delete(id);
      throw e;
    }
  }

  release(id: number): void {
    const h = this.held.get(id);
    if (!h) return;
    this.held.delete(id);
    try {
      h.release?.();
    } catch (e) {
      this.onError(e as Error);
    }
  }

  releaseAll(): void {
    for (const id of [...this.held.keys()]) this.release(id);
  }
}

export class LiveDelivery implements LivePublishing {
  private native: NativeLiveHttp;
  private held: HeldBodies;
  private servers = new Map<number, Attached>();
  private nextServer = 1;
  private closed = false;
  private readonly onError: (err: Error) => void;

  constructor(opts: LiveDeliveryOptions = {}) {
    const keepAliveMs = opts.keepAliveMs ?? 5000;
    const stallMs = opts.stallMs ?? 60_000;
    if (!Number.isInteger(keepAliveMs) || keepAliveMs < 1000)
      throw argError('keepAliveMs must be an integer ≥ 1000');
    if (!Number.isInteger(stallMs) || stallMs < 1000)
      throw argError('stallMs must be an integer ≥ 1000');
    this.onError = opts.onError ?? (() => {});
    this.held = new HeldBodies(this.onError);
    this.native = new (addon().LiveHttp)(this.onEvents, { keepAliveMs, stallMs });
  }

  /** The engine's id in this process: a worker thread passes it to `LiveDelivery.attach`. */
  get shareId(): number {
    return this.native.shareId;
  }

  /**
   * In a worker thread: publish into the engine the main thread made (its `shareId`). Bodies
   * are released back in this thread; when the thread exits its keys are unpublished.
   */
  static attach(
    shareId: number,
    opts: { onError?: (err: Error) => void } = {},
  ): AttachedLiveDelivery {
    return new AttachedLiveDelivery(shareId, opts.onError ?? (() => {}));
  }

  /**
   * Answer `GET <key>` with `head` (status line and headers, each ending in CRLF; Date,
   * Connection and Keep-Alive are added) and `body`. `body` must not change while published;
   * `release` runs once the native side no longer uses it (replaced or unpublished, and every
   * response sending it done). `fromZeroHead`: the head for `Range: bytes=0-` (default `head`).
   * `forPassHolders`: while gated, a viewer holding a pass may be answered from it — only for
   * bodies that are the same for every viewer (segments), never for a document that names its
   * URIs with the viewer's credentials (those go to the app).
   */
  publish(
    key: string,
    head: Buffer,
    body: Buffer,
    release?: () => void,
    fromZeroHead?: Buffer,
    forPassHolders = false,
  ): void {
    if (this.closed) throw argError('LiveDelivery is closed');
    this.held.hold(body, release, (id) =>
      this.native.publish(key, head, body, id, fromZeroHead, forPassHolders),
    );
  }

  unpublish(key: string): boolean {
    if (this.closed) return false;
    return this.native.unpublish(key);
  }

  /**
   * Route `server`'s new connections through the engine. Returns the function that undoes it
   * and drops the engine's connections of that server (call it when the server closes).
   */
  attach(server: Server): () => void {
    const id = this.nextServer++;
    const listeners = server.listeners('connection') as ConnectionListener[];
    const entry: Attached = { server, listeners };
    this.servers.set(id, entry);
    const onConnection = (socket: Socket): void => {
      // With nothing published (from any thread) there is nothing to answer.
      if (!this.closed && this.native.published() > 0 && this.adopt(socket, id)) return;
      for (const l of listeners) l.call(server, socket);
    };
    server.removeAllListeners('connection');
    server.on('connection', onConnection);
    return () => {
      if (!this.servers.delete(id)) return;
      server.off('connection', onConnection);
      for (const l of listeners) server.on('connection', l);
      if (!this.closed) this.native.closeServer(id);
    };
  }

  /** While on, only requests holding a live viewer pass are answered (docs/billing.md). */
  setGated(on: boolean): void {
    if (!this.closed) this.native.setGated(on);
  }

  /** Requests with exactly `query`, from `ip`, under `/stream/` may be answered for `ttlMs`. */
  grant(query: string, ip: string, stream: string, ttlMs: number): void {
    if (this.closed) return;
    if (!query || query.includes('\n') || ip.includes('\n') || stream.includes('\n'))
      throw argError('grant: query, ip and stream must be non-empty single lines');
    if (!Number.isFinite(ttlMs) || ttlMs <= 0) throw argError('grant: ttlMs must be positive');
    this.native.grant(query, ip, stream, Math.ceil(ttlMs));
  }

  revoke(query: string, ip: string, stream: string): void {
    if (!this.closed) this.native.revoke(query, ip, stream);
  }

  revokeAll(): void {
    if (!this.closed) this.native.revokeAll();
  }

  takePassUse(): PassUse[] {
    if (this.closed) return [];
    const raw = this.native.takePassUse();
    const out: PassUse[] = [];
    for (let i = 0; i + 2 < raw.length; i += 3) {
      const [query = '', ip = '', stream = ''] = String(raw[i]).split('\n');
      out.push({ query, ip, stream, requests: Number(raw[i + 1]), bytes: Number(raw[i + 2]) });
    }
    return out;
  }

  stats(): LiveDeliveryStats {
    if (this.closed)
      return {
        connections: 0,
        adopted: 0,
        served: 0,
        handedBack: 0,
        closedIdle: 0,
        bytes: 0,
        cut: 0,
        entries: 0,
      };
    return this.native.stats();
  }

  /** Stop the engine: its connections are closed, every published body released. */
  close(): void {
    if (this.closed) return;
    this.closed = true;
    const due = this.native.close();
    for (const id of due) this.held.release(id);
    // Whatever is left was never sent (an event still queued): nothing uses it any more.
    this.held.releaseAll();
    this.servers.clear();
  }

  private adopt(socket: Socket, server: number): boolean {
    // Only a fresh plain TCP connection: the descriptor is duplicated, then Node's own socket
    // object is destroyed (it has read nothing yet; reading starts on the next loop turn).
    const fd = (socket as unknown as { _handle?: { fd?: number } })._handle?.fd;
    if (typeof fd !== 'number' || fd < 0) return false;
    if (!this.native.adopt(fd, server)) return false;
    socket.destroy();
    return true;
  }

  private readonly onEvents = (handbacks: number[], releases: number[]): void => {
    for (const id of releases) this.held.release(id);
    for (let i = 0; i + 1 < handbacks.length; i += 2)
      this.handBack(handbacks[i]!, handbacks[i + 1]!);
  };

  /** A connection the engine gives up on: a new socket over its descriptor, to the listener. */
  private handBack(fd: number, id: number): void {
    const a = this.servers.get(id);
    let socket: Socket;
    try {
      socket = new Socket({ fd, readable: true, writable: true, allowHalfOpen: true });
    } catch (e) {
      closeSync(fd);
      this.onError(e as Error);
      return;
    }
    if (!a || this.closed) {
      socket.destroy();
      return;
    }
    // As net.Server does for the sockets it accepts: counted, so close() waits for them.
    const s = a.server as unknown as { _connections: number };
    const k = socket as unknown as { server: Server; _server: Server };
    s._connections++;
    k.server = a.server;
    k._server = a.server;
    for (const l of a.listeners) l.call(a.server, socket);
  }
}

/**
 * A worker thread's handle on the main thread's engine: publishes into the same table the
 * main thread's listeners answer from. The engine reads a body until it reports its release
 * here, on this thread; `close()` (or the thread exiting) unpublishes this handle's keys and
 * cuts the responses still sending its bodies.
 */
export class AttachedLiveDelivery implements LivePublishing {
  private native: NativeLivePublisher;
  private held: HeldBodies;
  private closed = false;

  constructor(shareId: number, onError: (err: Error) => void) {
    if (!Number.isInteger(shareId) || shareId <= 0)
      throw argError(`LiveDelivery.attach: shareId must be a positive integer, got ${shareId}`);
    this.held = new HeldBodies(onError);
    this.native = new (addon().LiveHttp.Publisher)(shareId, (ids) => {
      for (const id of ids) this.held.release(id);
    });
  }

  publish(
    key: string,
    head: Buffer,
    body: Buffer,
    release?: () => void,
    fromZeroHead?: Buffer,
    forPassHolders = false,
  ): void {
    if (this.closed) throw argError('LiveDelivery.attach: this handle is closed');
    this.held.hold(body, release, (id) =>
      this.native.publish(key, head, body, id, fromZeroHead, forPassHolders),
    );
  }

  unpublish(key: string): boolean {
    return !this.closed && this.native.unpublish(key);
  }

  close(): void {
    if (this.closed) return;
    this.closed = true;
    this.native.close();
    this.held.releaseAll();
  }
}
