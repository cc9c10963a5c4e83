// RTMP chunk stream (Adobe RTMP specification 1.0, section 5.3): bytes ↔ messages. Pure.
// ChunkReader takes bytes in any slicing and hands over whole messages; it follows the peer's
// Set Chunk Size itself. ChunkWriter cuts messages into chunks. Bounds: a message longer than
// `maxMessageBytes` or chunk streams in progress past `MAX_OPEN_STREAMS` are errors
// (RtmpProtocolError), and a message's payload is allocated only once its length is known —
// never from the chunk size, so a Set Chunk Size of 2^31 allocates nothing. With `transient`
// a payload is valid during the onMessage call only: the reader rewrites its block afterwards
// and a message that came whole in one chunk is a view of the bytes pushed.

export class RtmpProtocolError extends Error {
  override name = 'RtmpProtocolError';
}

/** Message type ids (section 5.4, 7.1). */
export const MSG_SET_CHUNK_SIZE = 1;
export const MSG_ABORT = 2;
export const MSG_ACK = 3;
export const MSG_USER_CONTROL = 4;
export const MSG_WINDOW_ACK_SIZE = 5;
export const MSG_SET_PEER_BANDWIDTH = 6;
export const MSG_AUDIO = 8;
export const MSG_VIDEO = 9;
export const MSG_DATA_AMF3 = 15;
export const MSG_COMMAND_AMF3 = 17;
export const MSG_DATA_AMF0 = 18;
export const MSG_COMMAND_AMF0 = 20;
export const MSG_AGGREGATE = 22;

/** User control event types (section 7.1.7). */
export const UC_STREAM_BEGIN = 0;
export const UC_STREAM_EOF = 1;
export const UC_SET_BUFFER_LENGTH = 3;
export const UC_PING_REQUEST = 6;
export const UC_PING_RESPONSE = 7;

export const DEFAULT_CHUNK_SIZE = 128;
/** The largest message length a chunk header can carry (24 bits); a bigger chunk size is the
 *  same as this one (every message then fits one chunk). */
export const MAX_MESSAGE_LENGTH = 0xffffff;
/** Chunk streams with a message in progress at once. */
export const MAX_OPEN_STREAMS = 64;
/** Payload bytes of all messages in progress at once. */
export const MAX_PENDING_BYTES = 32 * 1024 * 1024;
/** Message payloads up to SLAB_PIECE_BYTES are cut one after another from a shared block of
 *  SLAB_BYTES (one ArrayBuffer for many messages, not one each: far less allocation and GC at
 *  tens of messages a second per stream); bigger ones get their own. A payload is still the
 *  receiver's to keep: a block's bytes are never handed out twice. */
export const SLAB_BYTES = 256 * 1024;
export const SLAB_PIECE_BYTES = 32 * 1024;

export interface ChunkReaderOptions {
  /** A message longer than this is an error (default 8 MiB). */
  maxMessageBytes?: number;
  /** Payloads are valid during the onMessage call only (the receiver copies what it keeps):
   *  the block is written again once no message is in progress, so a connection reads media
   *  without allocating per message; default false (every payload the receiver's to keep). */
  transient?: boolean;
}

export interface RtmpMessage {
  csid: number;
  type: number;
  streamId: number;
  /** Milliseconds, 32 bits as on the wire (the caller unwraps). */
  timestamp: number;
  payload: Buffer;
}

interface StreamState {
  fmtSeen: boolean;
  timestamp: number;
  delta: number;
  length: number;
  type: number;
  streamId: number;
  extended: boolean;
  /** The message being assembled (null between messages). */
  buf: Buffer | null;
  filled: number;
}

export class ChunkReader {
  private chunkSize = DEFAULT_CHUNK_SIZE;
  private readonly streams = new Map<number, StreamState>();
  /** Header bytes left over from the last push (fewer than a whole header). */
  private rest: Buffer | null = null;
  /** The chunk whose payload is being read: its stream and bytes still to come. */
  private cur: StreamState | null = null;
  private curCsid = 0;
  private curLeft = 0;
  private pending = 0;
  /** Chunk streams with a message in progress. */
  private open = 0;
  private slab: Buffer | null = null;
  private slabUsed = 0;
  private readonly maxMessageBytes: number;
  private readonly transient: boolean;
  /** The largest payload cut from the slab (transient: the whole slab, it is rewound). */
  private readonly pieceBytes: number;
  bytesIn = 0;

  constructor(
    private readonly onMessage: (m: RtmpMessage) => void,
    opts: ChunkReaderOptions = {},
  ) {
    this.maxMessageBytes = opts.maxMessageBytes ?? 8 * 1024 * 1024;
    this.transient = opts.transient === true;
    this.pieceBytes = this.transient ? SLAB_BYTES : SLAB_PIECE_BYTES;
  }

  get peerChunkSize(): number {
    return this.chunkSize;
  }

  /** Payload bytes of the messages in progress (bounded by MAX_PENDING_BYTES). */
  get pendingBytes(): number {
    return this.pending;
  }

  /** The peer's Set Chunk Size (called by the reader itself for MSG_SET_CHUNK_SIZE). */
  setChunkSize(n: number): void {
    if (!Number.isInteger(n) || n < 1 || n > 0x7fffffff) {
      throw new RtmpProtocolError(`invalid chunk size ${n}`);
    }
    this.chunkSize = Math.min(n, MAX_MESSAGE_LENGTH);
  }

  push(data: Buffer): void {
    this.bytesIn += data.length;
    let b = data;
    if (this.rest) {
      b = Buffer.concat([this.rest, data]);
      this.rest = null;
    }
    let pos = 0;
    while (pos < b.length) {
      if (this.cur) {
        pos = this.payload(b, pos);
        continue;
      }
      const next = this.header(b, pos);
      if (next < 0) {
        this.rest = Buffer.from(b.subarray(pos));
        return;
      }
      pos = next;
    }
  }

  /** Parse one chunk header at `pos`; returns the position after it, -1 when incomplete. */
  private header(b: Buffer, pos: number): number {
    let p = pos;
    const avail = b.length;
    if (p >= avail) return -1;
    const b0 = b[p++]!;
    const fmt = b0 >> 6;
    let csid = b0 & 0x3f;
    if (csid === 0) {
      if (p + 1 > avail) return -1;
      csid = 64 + b[p++]!;
    } else if (csid === 1) {
      if (p + 2 > avail) return -1;
      csid = 64 + b[p]! + b[p + 1]! * 256;
      p += 2;
    }
    const mh = fmt === 0 ? 11 : fmt === 1 ? 7 : fmt === 2 ? 3 : 0;
    if (p + mh > avail) return -1;
    let s = this.streams.get(csid);
    if (!s) {
      if (fmt !== 0)
        throw new RtmpProtocolError(`chunk stream ${csid} opens without a full header`);
      if (this.streams.size >= MAX_OPEN_STREAMS * 4) this.prune();
      s = {
        fmtSeen: false,
        timestamp: 0,
        delta: 0,
        length: 0,
        type: 0,
        streamId: 0,
        extended: false,
        buf: null,
        filled: 0,
      };
    }
    let ts = 0;
    if (fmt <= 2) ts = b.readUIntBE(p, 3);
    if (fmt <= 1) {
      const length = b.readUIntBE(p + 3, 3);
      const type = b[p + 6]!;
      if (s.buf && length !== s.length) {
        throw new RtmpProtocolError(`chunk stream ${csid}: new message inside a message`);
      }
      s.length = length;
      s.type = type;
    }
    if (fmt === 0) s.streamId = b.readUInt32LE(p + 7);
    p += mh;
    const extended = fmt <= 2 ? ts === 0xffffff : s.extended;
    if (extended) {
      if (p + 4 > avail) return -1;
      if (fmt <= 2) ts = b.readUInt32BE(p);
      else ts = s.buf ? 0 : b.readUInt32BE(p);
      p += 4;
    }
    // Committed: the whole header is here.
    if (fmt <= 2) s.extended = extended;
    if (!s.buf) {
      if (fmt === 0) {
        s.timestamp = ts;
        s.delta = 0;
      } else if (fmt === 3) {
        s.timestamp = (s.timestamp + (s.extended ? ts : s.delta)) >>> 0;
      } else {
        s.delta = ts;
        s.timestamp = (s.timestamp + ts) >>> 0;
      }
      if (fmt === 3 && !s.fmtSeen) throw new RtmpProtocolError(`chunk stream ${csid}: no header`);
      this.check(csid, s);
      if (this.transient && s.length <= this.chunkSize && p + s.length <= avail) {
        // The whole message is this chunk and it is here: handed on as a view, no copy.
        s.fmtSeen = true;
        this.streams.set(csid, s);
        this.curCsid = csid;
        this.deliver(s, b.subarray(p, p + s.length));
        return p + s.length;
      }
      this.begin(s);
    }
    s.fmtSeen = true;
    this.streams.set(csid, s);
    this.cur = s;
    this.curCsid = csid;
    this.curLeft = Math.min(this.chunkSize, s.length - s.filled);
    if (this.curLeft === 0) this.finish(s);
    return p;
  }

  /** The bounds a new message must keep. */
  private check(csid: number, s: StreamState): void {
    if (s.length > this.maxMessageBytes) {
      throw new RtmpProtocolError(
        `message of ${s.length} bytes on chunk stream ${csid} (over the ${this.maxMessageBytes} byte cap)`,
      );
    }
    if (this.open >= MAX_OPEN_STREAMS)
      throw new RtmpProtocolError('too many chunk streams at once');
    if (this.pending + s.length > MAX_PENDING_BYTES) {
      throw new RtmpProtocolError('too many message bytes in progress');
    }
  }

  /** A message to assemble from its chunks. */
  private begin(s: StreamState): void {
    this.pending += s.length;
    this.open++;
    s.buf = this.alloc(s.length);
    s.filled = 0;
  }

  private alloc(n: number): Buffer {
    if (n > this.pieceBytes) return Buffer.allocUnsafe(n);
    if (!this.slab || this.slabUsed + n > this.slab.length) {
      this.slab = Buffer.allocUnsafeSlow(SLAB_BYTES);
      this.slabUsed = 0;
    }
    const b = this.slab.subarray(this.slabUsed, this.slabUsed + n);
    this.slabUsed += n;
    return b;
  }

  private payload(b: Buffer, pos: number): number {
    const s = this.cur!;
    const n = Math.min(this.curLeft, b.length - pos);
    b.copy(s.buf!, s.filled, pos, pos + n);
    s.filled += n;
    this.curLeft -= n;
    if (this.curLeft === 0) this.finish(s);
    return pos + n;
  }

  private finish(s: StreamState): void {
    this.cur = null;
    if (s.filled < s.length) return;
    const payload = s.buf!;
    s.buf = null;
    this.pending -= s.length;
    this.open--;
    this.deliver(s, payload);
    // Transient: nothing in progress keeps a piece of the slab, so it is written from the
    // start again (the payload just handed on was the receiver's during the call only).
    if (this.transient && this.open === 0) this.slabUsed = 0;
  }

  private deliver(s: StreamState, payload: Buffer): void {
    const m: RtmpMessage = {
      csid: this.curCsid,
      type: s.type,
      streamId: s.streamId,
      timestamp: s.timestamp,
      payload,
    };
    if (m.type === MSG_SET_CHUNK_SIZE) {
      if (payload.length < 4) throw new RtmpProtocolError('short Set Chunk Size');
      this.setChunkSize(payload.readUInt32BE(0));
    } else if (m.type === MSG_ABORT && payload.length >= 4) {
      this.abort(payload.readUInt32BE(0));
    }
    this.onMessage(m);
  }

  private abort(csid: number): void {
    const s = this.streams.get(csid);
    if (s?.buf) {
      this.pending -= s.length;
      this.open--;
      s.buf = null;
    }
  }

  /** Forget idle chunk streams (a peer cycling through ids). */
  private prune(): void {
    for (const [id, s] of this.streams) if (!s.buf) this.streams.delete(id);
  }
}

/** Messages → chunks with this side's chunk size (fmt 0 first chunk, fmt 3 after). */
export class ChunkWriter {
  chunkSize = DEFAULT_CHUNK_SIZE;

  write(m: Omit<RtmpMessage, 'payload'> & { payload: Uint8Array }): Buffer {
    const { csid, payload } = m;
    const ts = m.timestamp >>> 0;
    const ext = ts >= 0xffffff;
    const basic = csid < 64 ? 1 : csid < 320 ? 2 : 3;
    const chunks = Math.max(1, Math.ceil(payload.length / this.chunkSize));
    const extLen = ext ? 4 : 0;
    const size = basic + 11 + extLen + payload.length + (chunks - 1) * (basic + extLen);
    const out = Buffer.allocUnsafe(size);
    let p = 0;
    const basicHeader = (fmt: number) => {
      if (basic === 1) out[p++] = (fmt << 6) | csid;
      else if (basic === 2) {
        out[p++] = fmt << 6;
        out[p++] = csid - 64;
      } else {
        out[p++] = (fmt << 6) | 1;
        out.writeUInt16LE(csid - 64, p);
        p += 2;
      }
    };
    basicHeader(0);
    out.writeUIntBE(ext ? 0xffffff : ts, p, 3);
    out.writeUIntBE(payload.length, p + 3, 3);
    out[p + 6] = m.type;
    out.writeUInt32LE(m.streamId >>> 0, p + 7);
    p += 11;
    if (ext) p = out.writeUInt32BE(ts, p);
    for (let off = 0; off < payload.length || off === 0; ) {
      if (off > 0) {
        basicHeader(3);
        if (ext) p = out.writeUInt32BE(ts, p);
      }
      const n = Math.min(this.chunkSize, payload.length - off);
      out.set(payload.subarray(off, off + n), p);
      p += n;
      off += n;
      if (n === 0) break;
    }
    return out;
  }
}

// --- protocol control and user control messages ----------------------------------------------

function u32(n: number): Buffer {
  const b = Buffer.allocUnsafe(4);
  b.writeUInt32BE(n >>> 0);
  return b;
}

export function setChunkSize(n: number): RtmpMessage {
  return control(MSG_SET_CHUNK_SIZE, u32(n));
}

export function windowAckSize(n: number): RtmpMessage {
  return control(MSG_WINDOW_ACK_SIZE, u32(n));
}

export function acknowledgement(sequence: number): RtmpMessage {
  return control(MSG_ACK, u32(sequence));
}

/** limit type 2 = dynamic. */
export function setPeerBandwidth(n: number, limitType = 2): RtmpMessage {
  return control(MSG_SET_PEER_BANDWIDTH, Buffer.concat([u32(n), Buffer.of(limitType)]));
}

export function userControl(event: number, ...args: number[]): RtmpMessage {
  const b = Buffer.allocUnsafe(2 + 4 * args.length);
  b.writeUInt16BE(event);
  for (let i = 0; i < args.length; i++) b.writeUInt32BE(args[i]! >>> 0, 2 + 4 * i);
  return control(MSG_USER_CONTROL, b);
}

function control(type: number, payload: Buffer): RtmpMessage {
  return { csid: 2, type, streamId: 0, timestamp: 0, payload };
}

// --- handshake (section 5.2): the simple handshake ---------------------------------------------

export const HANDSHAKE_SIZE = 1536;
export const RTMP_VERSION = 3;

/** C0+C1 (or S0+S1): version 3, time, zero version field (the "simple" handshake, which
 *  nginx-rtmp, ffmpeg, librtmp/OBS accept: no digest is asked for or checked), random bytes. */
export function handshakeHello(timeMs: number, random: (n: number) => Buffer): Buffer {
  const b = Buffer.alloc(1 + HANDSHAKE_SIZE);
  b[0] = RTMP_VERSION;
  b.writeUInt32BE(timeMs >>> 0, 1);
  random(HANDSHAKE_SIZE - 8).copy(b, 9);
  return b;
}

/** C2 (or S2): the peer's C1/S1 echoed. */
export function handshakeEcho(peerHello: Buffer): Buffer {
  return Buffer.from(peerHello.subarray(0, HANDSHAKE_SIZE));
}
