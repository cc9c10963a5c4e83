// RTMP publish: one listening socket per host:port, shared by every `rtmp` input whose url
// listens there (`rtmp://@host:port/app/key`), each input one route by application and stream
// key. An encoder connects to `app`, publishes `key`: the route's input takes the media. A key
// no input has is refused (onStatus NetStream.Publish.BadName, then the connection is closed)
// and counted on the inputs of that port; so is a second publisher while one is publishing.
// RTMP playback from sluice is not offered (play is refused).
import net from 'node:net';
import { type AmfValue, amfObject } from '../../protocols/rtmp/amf0.ts';
import {
  type RtmpMessage,
  setPeerBandwidth,
  UC_STREAM_BEGIN,
  userControl,
  windowAckSize,
} from '../../protocols/rtmp/chunk.ts';
import type { Clock, Timer } from '../../util/clock.ts';
import { RtmpConnection } from './connection.ts';

/** What an input receives from its publisher. */
export interface PublishSink {
  metadata(values: AmfValue[]): void;
  /** Audio or video; `m.payload` is valid during the call only. */
  media(m: RtmpMessage): void;
  batch(bytes: number): void;
  /** The publisher is gone (unpublished, hung up, dropped). */
  ended(reason: string): void;
}

export interface Publisher {
  peer: string;
  close(reason: string): void;
}

/** An input listening for a publisher. */
export interface PublishTarget {
  readonly app: string;
  readonly key: string;
  /** A publisher for this route: its sink, or the reason it is refused. */
  accept(p: Publisher): PublishSink | string;
  /** A publish on this port was refused (wrong key or application, busy route). */
  refused(peer: string, reason: string): void;
  /** The listening socket's state: '' listening, else why it cannot. */
  listenState(error: string): void;
  trace(msg: string, data: Record<string, unknown>): void;
}

/** A connection that has not started publishing within this is closed. */
export const PUBLISH_WAIT_MS = 10_000;
const WINDOW = 2_500_000;
const PUBLISH_STREAM_ID = 1;

const listeners = new Map<string, RtmpListener>();

/** Add `target` on host:port (the listener opens with its first route, closes with its last);
 *  returns the function that removes it. Throws when the route is taken. */
export function listenFor(
  host: string,
  port: number,
  target: PublishTarget,
  clock: Clock,
): () => void {
  const id = `${host}:${port}`;
  let l = listeners.get(id);
  if (!l) {
    l = new RtmpListener(host, port, clock, () => listeners.delete(id));
    listeners.set(id, l);
  }
  l.add(target);
  const listener = l;
  return () => listener.remove(target);
}

class RtmpListener {
  private readonly server: net.Server;
  private readonly routes = new Map<string, PublishTarget>();
  private readonly conns = new Set<RtmpConnection>();
  private error = '';

  constructor(
    host: string,
    port: number,
    private readonly clock: Clock,
    private readonly gone: () => void,
  ) {
    this.server = net.createServer((s) => this.accept(s));
    this.server.on('error', (err: Error & { code?: string }) => {
      this.error =
        err.code === 'EADDRINUSE'
          ? `port ${port} on ${host} is already in use`
          : `cannot listen on ${host}:${port}: ${err.message}`;
      for (const r of this.routes.values()) r.listenState(this.error);
    });
    this.server.listen(port, host, () => {
      for (const r of this.routes.values()) r.listenState('');
    });
  }

  add(t: PublishTarget): void {
    const k = routeKey(t.app, t.key);
    if (this.routes.has(k)) {
      throw new Error(`another input already listens for ${t.app}/${t.key} on this port`);
    }
    this.routes.set(k, t);
    if (this.error) t.listenState(this.error);
    else if (this.server.listening) t.listenState('');
  }

  remove(t: PublishTarget): void {
    const k = routeKey(t.app, t.key);
    if (this.routes.get(k) === t) this.routes.delete(k);
    if (this.routes.size > 0) return;
    this.gone();
    for (const c of this.conns) c.close(null);
    this.server.close();
  }

  private refuse(peer: string, reason: string, app: string): void {
    const inApp = [...this.routes.values()].filter((r) => r.app === app);
    for (const r of inApp.length ? inApp : this.routes.values()) r.refused(peer, reason);
  }

  private accept(socket: net.Socket): void {
    const peer = `${socket.remoteAddress}:${socket.remotePort}`;
    socket.setNoDelay(true);
    let app = '';
    let sink: PublishSink | null = null;
    let waitTimer: Timer | null = this.clock.setTimeout(
      () => conn.close(new Error('no publish within 10 s')),
      PUBLISH_WAIT_MS,
    );
    const trace = (msg: string, data: Record<string, unknown>) => {
      for (const r of this.routes.values()) if (!app || r.app === app) r.trace(msg, data);
    };
    const status = (level: string, code: string, description: string) =>
      conn.command(PUBLISH_STREAM_ID, 'onStatus', 0, null, { level, code, description });
    const conn: RtmpConnection = new RtmpConnection(socket, 'server', {
      onReady: () => {},
      onCommand: (name, txn, args) => {
        trace('rtmp command received', { peer, name, txn, args });
        switch (name) {
          case 'connect': {
            const o = amfObject(args[0] ?? null);
            app = String(o?.['app'] ?? '').replace(/\/+$/, '');
            if (![...this.routes.values()].some((r) => r.app === app)) {
              this.refuse(peer, `no application ${app}`, app);
              conn.command(0, '_error', txn, null, {
                level: 'error',
                code: 'NetConnection.Connect.Rejected',
                description: `no application ${app}`,
              });
              conn.end(null);
              return;
            }
            conn.send(windowAckSize(WINDOW));
            conn.send(setPeerBandwidth(WINDOW));
            conn.command(
              0,
              '_result',
              txn,
              { fmsVer: 'FMS/3,0,1,123', capabilities: 31 },
              {
                level: 'status',
                code: 'NetConnection.Connect.Success',
                description: 'Connection succeeded.',
                objectEncoding: 0,
              },
            );
            return;
          }
          case 'releaseStream':
          case 'FCPublish':
            conn.command(0, '_result', txn, null, undefined);
            return;
          case 'createStream':
            conn.command(0, '_result', txn, null, PUBLISH_STREAM_ID);
            return;
          case 'publish': {
            const name = typeof args[1] === 'string' ? args[1] : '';
            const key = decodeURIComponentSafe(name.replace(/\?.*$/, ''));
            const route = this.routes.get(routeKey(app, key));
            let reason = route ? '' : 'wrong stream key';
            if (route && !sink) {
              const r = route.accept({ peer, close: (why) => conn.close(new Error(why)) });
              if (typeof r === 'string') reason = r;
              else sink = r;
            }
            if (!sink) {
              this.refuse(peer, reason, app);
              status('error', 'NetStream.Publish.BadName', reason);
              conn.end(null);
              return;
            }
            waitTimer?.cancel();
            waitTimer = null;
            conn.send(userControl(UC_STREAM_BEGIN, PUBLISH_STREAM_ID));
            status('status', 'NetStream.Publish.Start', `${key} is now published.`);
            return;
          }
          case 'FCUnpublish':
          case 'deleteStream':
          case 'closeStream':
            if (sink) {
              const s = sink;
              sink = null;
              s.ended('publisher stopped publishing');
            }
            return;
          case 'play':
            status('error', 'NetStream.Play.Failed', 'playback over RTMP is not offered');
            conn.end(null);
            return;
          default:
            return;
        }
      },
      onData: (values) => sink?.metadata(values),
      onMedia: (m) => sink?.media(m),
      onBatch: (n) => sink?.batch(n),
      onClose: (err) => {
        waitTimer?.cancel();
        this.conns.delete(conn);
        if (err && !sink) this.refuse(peer, err.message, app);
        if (sink) {
          const s = sink;
          sink = null;
          s.ended(err ? `publisher dropped: ${err.message}` : 'publisher hung up');
        }
      },
    });
    this.conns.add(conn);
  }
}

function routeKey(app: string, key: string): string {
  return `${app}\u0000${key}`;
}

function decodeURIComponentSafe(s: string): string {
  try {
    return decodeURIComponent(s);
  } catch {
    return s;
  }
}
