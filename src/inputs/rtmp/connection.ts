// One RTMP connection over a socket (TCP or TLS), either side: the simple handshake, the chunk
// stream both ways, acknowledgements against the peer's window, ping answers; commands
// (AMF0), data messages and media handed to the owner. Protocol errors close the socket with
// the error given to `onClose`. A message's payload is valid during the call that hands it
// over (the chunk reader writes its block again after it): what is kept is copied.
import { randomBytes } from 'node:crypto';
import type { Socket } from 'node:net';
import { Amf0Error, type AmfValue, decodeAmf0, encodeAmf0 } from '../../protocols/rtmp/amf0.ts';
import {
  acknowledgement,
  ChunkReader,
  ChunkWriter,
  HANDSHAKE_SIZE,
  handshakeEcho,
  handshakeHello,
  MSG_AUDIO,
  MSG_COMMAND_AMF0,
  MSG_COMMAND_AMF3,
  MSG_DATA_AMF0,
  MSG_DATA_AMF3,
  MSG_USER_CONTROL,
  MSG_VIDEO,
  MSG_WINDOW_ACK_SIZE,
  RTMP_VERSION,
  type RtmpMessage,
  RtmpProtocolError,
  setChunkSize,
  UC_PING_REQUEST,
  UC_PING_RESPONSE,
  userControl,
} from '../../protocols/rtmp/chunk.ts';

/** Our outgoing chunk size (announced with Set Chunk Size once the handshake is done). */
export const OUT_CHUNK_SIZE = 4096;
export const CSID_COMMAND = 3;

export interface ConnectionEvents {
  /** The handshake is done: commands may be sent. */
  onReady(): void;
  onCommand(name: string, txn: number, args: AmfValue[], m: RtmpMessage): void;
  onData(values: AmfValue[], m: RtmpMessage): void;
  /** Audio or video; `m.payload` is valid during the call only. */
  onMedia(m: RtmpMessage): void;
  /** After each batch of bytes read (the owner flushes its muxer). */
  onBatch?(bytes: number): void;
  onClose(err: Error | null): void;
}

export class RtmpConnection {
  private readonly reader: ChunkReader;
  private readonly writer = new ChunkWriter();
  private stage: 'hello' | 'echo' | 'open' = 'hello';
  private hs: Buffer[] = [];
  private hsLen = 0;
  private hsBytes = 0;
  private peerWindow = 0;
  private lastAck = 0;
  private closed = false;
  bytesOut = 0;

  constructor(
    readonly socket: Socket,
    private readonly role: 'client' | 'server',
    private readonly ev: ConnectionEvents,
    opts: { maxMessageBytes?: number; ownReads?: boolean } = {},
  ) {
    this.reader = new ChunkReader((m) => this.message(m), {
      ...(opts.maxMessageBytes !== undefined ? { maxMessageBytes: opts.maxMessageBytes } : {}),
      transient: true,
    });
    // ownReads: the socket was made with `onread` and its owner calls feed() (a reused read
    // buffer: everything kept from it is copied by the reader).
    if (!opts.ownReads) socket.on('data', (d: Buffer) => this.feed(d));
    socket.on('error', (err) => this.close(err));
    socket.on('close', () => this.close(null));
  }

  get bytesIn(): number {
    return this.reader.bytesIn + this.hsBytes;
  }

  /** Bytes of the messages the peer has begun and not finished. */
  get pendingBytes(): number {
    return this.reader.pendingBytes;
  }

  /** Client: send C0+C1 once connected. */
  hello(): void {
    this.raw(handshakeHello(Date.now(), randomBytes));
  }

  /** Bytes read from the socket (valid during the call only). */
  feed(d: Buffer): void {
    if (this.closed) return;
    try {
      let rest: Buffer | null = d;
      if (this.stage !== 'open') rest = this.handshake(d);
      if (rest && rest.length > 0) {
        this.reader.push(rest);
        this.maybeAck();
      }
      this.ev.onBatch?.(d.length);
    } catch (err) {
      const e =
        err instanceof RtmpProtocolError || err instanceof Amf0Error
          ? err
          : new RtmpProtocolError(`protocol error: ${(err as Error).message}`);
      this.close(e);
    }
  }

  /** Handshake bytes; returns what follows it (chunk stream), or null while not done. */
  private handshake(d: Buffer): Buffer | null {
    // A copy: `d` is the reader's buffer, valid during this call only, and a handshake that
    // arrives in several reads is put together from the earlier ones (a kept view of the
    // reused buffer read a later read's bytes as S0: "handshake version 32").
    this.hs.push(Buffer.from(d));
    this.hsLen += d.length;
    const need =
      this.stage === 'hello'
        ? 1 + HANDSHAKE_SIZE * (this.role === 'client' ? 2 : 1)
        : HANDSHAKE_SIZE;
    if (this.hsLen < need) return null;
    const all = Buffer.concat(this.hs);
    this.hs = [];
    this.hsLen = 0;
    this.hsBytes += need;
    if (this.stage === 'hello') {
      if (all[0] !== RTMP_VERSION) {
        throw new RtmpProtocolError(`not an RTMP peer (handshake version ${all[0]})`);
      }
      const peerHello = all.subarray(1, 1 + HANDSHAKE_SIZE);
      if (this.role === 'client') {
        // S0 S1 S2 read: answer C2 (S1 echoed) and the connection is open.
        this.raw(handshakeEcho(peerHello));
        this.open();
        return all.subarray(need);
      }
      // Server: C0 C1 read; S0 S1 S2 (C1 echoed), then C2 is awaited.
      this.raw(Buffer.concat([handshakeHello(Date.now(), randomBytes), handshakeEcho(peerHello)]));
      this.stage = 'echo';
      const rest = all.subarray(need);
      return rest.length ? this.handshake(rest) : null;
    }
    // Server: C2 read.
    this.open();
    return all.subarray(need);
  }

  private open(): void {
    this.stage = 'open';
    this.send(setChunkSize(OUT_CHUNK_SIZE));
    this.writer.chunkSize = OUT_CHUNK_SIZE;
    this.ev.onReady();
  }

  private message(m: RtmpMessage): void {
    switch (m.type) {
      case MSG_WINDOW_ACK_SIZE:
        if (m.payload.length >= 4) this.peerWindow = m.payload.readUInt32BE(0);
        return;
      case MSG_USER_CONTROL:
        if (m.payload.length >= 6 && m.payload.readUInt16BE(0) === UC_PING_REQUEST) {
          this.send(userControl(UC_PING_RESPONSE, m.payload.readUInt32BE(2)));
        }
        return;
      case MSG_AUDIO:
      case MSG_VIDEO:
        this.ev.onMedia(m);
        return;
      case MSG_DATA_AMF0:
      case MSG_DATA_AMF3:
        this.ev.onData(decodeAmf0(m.type === MSG_DATA_AMF3 ? m.payload.subarray(1) : m.payload), m);
        return;
      case MSG_COMMAND_AMF0:
      case MSG_COMMAND_AMF3: {
        const v = decodeAmf0(m.type === MSG_COMMAND_AMF3 ? m.payload.subarray(1) : m.payload);
        const name = typeof v[0] === 'string' ? v[0] : '';
        const txn = typeof v[1] === 'number' ? v[1] : 0;
        if (!name) throw new RtmpProtocolError('command without a name');
        this.ev.onCommand(name, txn, v.slice(2), m);
        return;
      }
      default:
        return; // chunk size and abort are the reader's; ack, bandwidth, aggregate ignored
    }
  }

  private maybeAck(): void {
    if (this.peerWindow <= 0) return;
    const n = this.bytesIn;
    if (n - this.lastAck >= this.peerWindow) {
      this.lastAck = n;
      this.send(acknowledgement(n));
    }
  }

  /** Send a protocol message. */
  send(m: RtmpMessage): void {
    this.raw(this.writer.write(m));
  }

  /** Send an AMF0 command on the command chunk stream. */
  command(streamId: number, ...values: AmfValue[]): void {
    this.send({
      csid: CSID_COMMAND,
      type: MSG_COMMAND_AMF0,
      streamId,
      timestamp: 0,
      payload: encodeAmf0(...values),
    });
  }

  private raw(b: Buffer): void {
    if (this.closed || this.socket.destroyed) return;
    this.bytesOut += b.length;
    this.socket.write(b);
  }

  /** Close at once (protocol error, input closing). */
  close(err: Error | null): void {
    if (this.closed) return;
    this.closed = true;
    this.socket.destroy();
    this.ev.onClose(err);
  }

  /** Close after what was written has gone out (an error answer before hanging up). */
  end(err: Error | null): void {
    if (this.closed) return;
    this.closed = true;
    this.socket.end();
    const s = this.socket;
    const timer = setTimeout(() => s.destroy(), 2000);
    s.once('close', () => clearTimeout(timer));
    this.ev.onClose(err);
  }
}
