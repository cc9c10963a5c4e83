// One pull attempt of the `rtmp` input: TCP (or TLS for rtmps://) to the origin, the handshake,
// connect → createStream → play, then media to the input until the origin hangs up, refuses,
// or sends nothing for `client-timeout`. The first media message must come within
// `client-timeout` of the start (one timer: an origin trickling bytes cannot hold the attempt
// in its handshake). Ends with the reason in words.
import net from 'node:net';
import tls from 'node:tls';
import { type AmfValue, amfObject } from '../../protocols/rtmp/amf0.ts';
import {
  type RtmpMessage,
  UC_SET_BUFFER_LENGTH,
  userControl,
  windowAckSize,
} from '../../protocols/rtmp/chunk.ts';
import type { Clock, Timer } from '../../util/clock.ts';
import { unreachable } from '../common.ts';
import { type LowWaterSocket, recvLowWaterOf } from '../recv-low-water.ts';
import { RtmpConnection } from './connection.ts';
import type { RtmpUrl } from './url.ts';

export interface PullEvents {
  trace(msg: string, data: Record<string, unknown>): void;
  /** The origin answered play with NetStream.Play.Start (or media began). */
  playing(): void;
  /** An onStatus code (kept for the status). */
  statusCode(code: string, description: string): void;
  metadata(values: AmfValue[]): void;
  media(m: RtmpMessage): void;
  batch(bytes: number): void;
  /** The attempt is over; `reason` in words. */
  ended(reason: string, playedMs: number): void;
}

const TXN_CONNECT = 1;
const TXN_CREATE_STREAM = 2;
const WINDOW = 2_500_000;
const BUFFER_MS = 1000;
/** Plain TCP pulls read into this one buffer (everything kept from it is copied, and reads
 *  are handled one at a time on the main thread). */
const READ_BUFFER = Buffer.allocUnsafe(64 * 1024);

export interface PullOptions {
  url: RtmpUrl;
  localAddress: string;
  timeoutMs: number;
  tlsVerify: boolean;
  clock: Clock;
}

export class PullSession {
  private conn: RtmpConnection | null = null;
  /** Plain TCP: reads batched by the socket's receive low-water mark (recv-low-water.ts). */
  private lowWater: LowWaterSocket | null = null;
  private timer: Timer | null = null;
  /** Until the first media message: ends the attempt when `client-timeout` has passed. */
  private firstMedia: Timer | null = null;
  /** How far the attempt has come (for the deadline's words). */
  private stage = 'no TCP connection yet';
  private lastIn = 0;
  private startedAt = 0;
  private done = false;
  private connected = false;
  private streamId = 0;

  constructor(
    private readonly o: PullOptions,
    private readonly ev: PullEvents,
  ) {}

  start(): void {
    const { url } = this.o;
    const base = {
      host: url.host,
      port: url.port,
      ...(this.o.localAddress ? { localAddress: this.o.localAddress } : {}),
    };
    const socket = url.tls
      ? tls.connect({
          ...base,
          ...(net.isIP(url.host) ? {} : { servername: url.host }),
          rejectUnauthorized: this.o.tlsVerify,
        })
      : net.connect({
          ...base,
          // One read buffer reused for every read (no Buffer and no stream event per read).
          onread: { buffer: READ_BUFFER, callback: (n, buf) => this.read(buf, n) },
        });
    socket.setNoDelay(true);
    socket.once(url.tls ? 'secureConnect' : 'connect', () => {
      this.connected = true;
      this.stage = 'handshake not finished';
      if (!url.tls && !this.done) this.lowWater = recvLowWaterOf(this.o.clock).add(socket);
      this.conn?.hello();
    });
    this.startedAt = this.o.clock.monotonic();
    this.lastIn = this.startedAt;
    this.conn = new RtmpConnection(
      socket,
      'client',
      {
        onReady: () => this.onReady(),
        onCommand: (name, txn, args) => this.onCommand(name, txn, args),
        onData: (values) => this.ev.metadata(values),
        onMedia: (m) => {
          if (this.firstMedia) {
            this.firstMedia.cancel();
            this.firstMedia = null;
            this.stage = 'playing';
          }
          this.ev.media(m);
        },
        onBatch: (n) => {
          this.lastIn = this.o.clock.monotonic();
          this.ev.batch(n);
        },
        onClose: (err) => this.end(err ? this.describe(err) : 'origin closed the connection'),
      },
      { ownReads: !url.tls },
    );
    this.timer = this.o.clock.setInterval(() => this.watch(), Math.min(1000, this.o.timeoutMs / 4));
    this.firstMedia = this.o.clock.setTimeout(() => {
      const s = this.o.timeoutMs / 1000;
      this.close(`no media from origin within ${s} s of connecting (${this.stage})`);
    }, this.o.timeoutMs);
  }

  /** Bytes the attempt holds of what the origin sent: messages begun and not finished. */
  get pendingBytes(): number {
    return this.conn?.pendingBytes ?? 0;
  }

  private read(buf: Uint8Array, n: number): boolean {
    this.lowWater?.read(n);
    this.conn?.feed(Buffer.from(buf.buffer, buf.byteOffset, n));
    return true;
  }

  private describe(err: Error & { code?: string }): string {
    const { host } = this.o.url;
    switch (err.code) {
      case 'ECONNREFUSED':
        return unreachable(err, this.o.url.tcUrl)!;
      case 'ENOTFOUND':
      case 'EAI_AGAIN':
        return `origin host ${host} not found`;
      case 'ECONNRESET':
        return 'origin reset the connection';
      case 'EADDRNOTAVAIL':
        return `bind-if: cannot connect from ${this.o.localAddress}`;
    }
    if (this.o.url.tls && !this.connected) return `TLS failure: ${err.message}`;
    return err.name === 'RtmpProtocolError' || err.name === 'Amf0Error'
      ? `protocol error from origin: ${err.message}`
      : err.message;
  }

  private watch(): void {
    const idle = this.o.clock.monotonic() - this.lastIn;
    if (idle >= this.o.timeoutMs) {
      const s = Math.round(this.o.timeoutMs / 1000);
      this.close(
        this.connected ? `no data from origin in ${s} s` : `no answer from origin in ${s} s`,
      );
    }
  }

  private send(name: string, streamId: number, ...values: AmfValue[]): void {
    this.ev.trace('rtmp command sent', { name, values });
    this.conn?.command(streamId, name, ...values);
  }

  private onReady(): void {
    const { url } = this.o;
    this.stage = 'no answer to connect';
    this.send('connect', 0, TXN_CONNECT, {
      app: url.app,
      flashVer: 'LNX 9,0,124,2',
      tcUrl: url.tcUrl,
      fpad: false,
      capabilities: 15,
      audioCodecs: 0x0fff,
      videoCodecs: 0x00ff,
      videoFunction: 1,
      objectEncoding: 0,
      fourCcList: ['avc1', 'hvc1'],
    });
  }

  private onCommand(name: string, txn: number, args: AmfValue[]): void {
    this.ev.trace('rtmp command received', { name, txn, args });
    const info = amfObject(args[1] ?? null);
    const code = typeof info?.['code'] === 'string' ? info['code'] : '';
    const desc = typeof info?.['description'] === 'string' ? info['description'] : '';
    if (name === '_error') {
      const what =
        txn === TXN_CONNECT ? 'connect' : txn === TXN_CREATE_STREAM ? 'createStream' : 'command';
      this.ev.statusCode(code, desc);
      this.close(
        `origin refused ${what}: ${[code, desc].filter(Boolean).join(' ') || 'no reason given'}`,
      );
      return;
    }
    if (name === '_result' && txn === TXN_CONNECT) {
      this.conn?.send(windowAckSize(WINDOW));
      this.stage = 'no answer to createStream';
      this.send('createStream', 0, TXN_CREATE_STREAM, null);
      return;
    }
    if (name === '_result' && txn === TXN_CREATE_STREAM) {
      this.streamId = typeof args[1] === 'number' ? args[1] : 1;
      this.stage = 'no answer to play';
      this.send('play', this.streamId, 0, null, this.o.url.stream, -2);
      this.conn?.send(userControl(UC_SET_BUFFER_LENGTH, this.streamId, BUFFER_MS));
      return;
    }
    if (name === 'onStatus') {
      this.ev.statusCode(code, desc);
      if (code === 'NetStream.Play.Start') {
        if (this.firstMedia) this.stage = 'play started, no media yet';
        this.ev.playing();
      } else if (
        info?.['level'] === 'error' ||
        code === 'NetStream.Play.StreamNotFound' ||
        code === 'NetStream.Play.Failed'
      ) {
        this.close(`${code || 'error'}${desc ? `: ${desc}` : ''}`);
      } else if (code === 'NetStream.Play.Stop') {
        this.close('origin stopped the stream (NetStream.Play.Stop)');
      }
    }
  }

  private end(reason: string): void {
    if (this.done) return;
    this.done = true;
    this.lowWater?.remove();
    this.lowWater = null;
    this.timer?.cancel();
    this.timer = null;
    this.firstMedia?.cancel();
    this.firstMedia = null;
    this.ev.ended(reason, this.o.clock.monotonic() - this.startedAt);
  }

  close(reason = 'closed'): void {
    this.end(reason);
    this.conn?.close(null);
  }
}
