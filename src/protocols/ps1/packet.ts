// ps1 packets (docs/ps1.md): the 8-byte common header and every packet type's body, encoded and
// decoded with the byte offsets the doc gives. decode() never throws: a datagram it cannot read
// is `null` and the caller counts it.

export const MAGIC = 0x5031; // "P1"
export const VERSION = 1;
export const HEADER_SIZE = 8;
export const NONCE_SIZE = 16;
export const PROOF_SIZE = 32;
export const KEY_CHECK_SIZE = 16;
export const TS_PACKET_SIZE = 188;
export const MAX_TS_PER_DATA = 7;
export const DATA_HEADER_SIZE = 20;
export const MAX_DATAGRAM = DATA_HEADER_SIZE + MAX_TS_PER_DATA * TS_PACKET_SIZE;
export const HELLO_SIZE = 64;
export const MAX_NACK_RANGES = 180;
export const MAX_LOGIN_BYTES = 255;

export const PacketType = {
  hello: 0x01,
  challenge: 0x02,
  auth: 0x03,
  accept: 0x04,
  reject: 0x05,
  data: 0x10,
  nack: 0x11,
  ack: 0x12,
  ackack: 0x13,
  keepalive: 0x14,
  bye: 0x1f,
} as const;

export const Flag = { peerAuth: 1, encrypted: 2 } as const;
export const DataFlag = { retransmission: 1, encrypted: 2 } as const;

/** REJECT and BYE reasons (docs/ps1.md), in the words a client shows. */
export const Reason = {
  closed: 0,
  version: 1,
  credentials: 2,
  peerDomain: 3,
  peerAuthOff: 4,
  passphrase: 5,
  encryption: 6,
  full: 7,
  cookie: 8,
  streamStopped: 9,
  timeout: 10,
  exhausted: 11,
} as const;

const REASON_TEXT: Record<number, string> = {
  0: 'closed',
  1: 'the server speaks another ps1 version',
  2: 'login or password refused',
  3: 'peer-auth refused: not a peer of the server’s cluster (cluster.domain differs)',
  4: 'peer-auth refused: the server does not admit cluster peers (peer-auth off there)',
  5: 'passphrase differs',
  6: 'encryption mismatch: one side has a passphrase, the other none',
  7: 'the server has no free session',
  8: 'challenge expired',
  9: 'the server’s stream stopped',
  10: 'session timed out',
  11: 'sequence numbers exhausted',
};

export function reasonText(code: number): string {
  return REASON_TEXT[code] ?? `unknown reason ${code}`;
}

export interface NackRange {
  first: number;
  count: number;
}

export type Packet =
  | { type: 'hello'; version: number; cnonce: Buffer; flags: number }
  | { type: 'challenge'; cnonce: Buffer; snonce: Buffer }
  | {
      type: 'auth';
      cnonce: Buffer;
      snonce: Buffer;
      flags: number;
      latencyMs: number;
      proof: Buffer;
      keyCheck: Buffer;
      login: string;
    }
  | { type: 'accept'; session: number; cnonce: Buffer; proof: Buffer; bufferMs: number }
  | { type: 'reject'; version: number; cnonce: Buffer; reason: number }
  | {
      type: 'data';
      session: number;
      seq: number;
      timestamp: number;
      flags: number;
      payload: Buffer;
    }
  | { type: 'nack'; session: number; ranges: NackRange[] }
  | {
      type: 'ack';
      session: number;
      ackSeq: number;
      echo: number;
      rttUs: number;
      lost: number;
      recovered: number;
    }
  | { type: 'ackack'; session: number; echo: number }
  | { type: 'keepalive'; session: number }
  | { type: 'bye'; session: number; reason: number };

function header(size: number, type: number, session: number, version = VERSION): Buffer {
  const b = Buffer.alloc(size);
  b.writeUInt16BE(MAGIC, 0);
  b[2] = version;
  b[3] = type;
  b.writeUInt32BE(session >>> 0, 4);
  return b;
}

export function encodeHello(cnonce: Buffer, flags: number): Buffer {
  const b = header(HELLO_SIZE, PacketType.hello, 0);
  cnonce.copy(b, 8, 0, NONCE_SIZE);
  b[24] = flags;
  return b;
}

export function encodeChallenge(cnonce: Buffer, snonce: Buffer): Buffer {
  const b = header(40, PacketType.challenge, 0);
  cnonce.copy(b, 8, 0, NONCE_SIZE);
  snonce.copy(b, 24, 0, NONCE_SIZE);
  return b;
}

export function encodeAuth(p: Omit<Extract<Packet, { type: 'auth' }>, 'type'>): Buffer {
  const login = Buffer.from(p.login, 'utf8');
  if (login.length > MAX_LOGIN_BYTES) throw new Error(`login longer than ${MAX_LOGIN_BYTES} bytes`);
  const b = header(92 + login.length, PacketType.auth, 0);
  p.cnonce.copy(b, 8, 0, NONCE_SIZE);
  p.snonce.copy(b, 24, 0, NONCE_SIZE);
  b[40] = p.flags;
  b[41] = login.length;
  b.writeUInt16BE(Math.min(0xffff, Math.max(0, Math.round(p.latencyMs))), 42);
  p.proof.copy(b, 44, 0, PROOF_SIZE);
  p.keyCheck.copy(b, 76, 0, KEY_CHECK_SIZE);
  login.copy(b, 92);
  return b;
}

export function encodeAccept(
  session: number,
  cnonce: Buffer,
  proof: Buffer,
  bufferMs: number,
): Buffer {
  const b = header(58, PacketType.accept, session);
  cnonce.copy(b, 8, 0, NONCE_SIZE);
  proof.copy(b, 24, 0, PROOF_SIZE);
  b.writeUInt16BE(Math.min(0xffff, bufferMs), 56);
  return b;
}

export function encodeReject(cnonce: Buffer, reason: number): Buffer {
  const b = header(26, PacketType.reject, 0);
  cnonce.copy(b, 8, 0, NONCE_SIZE);
  b[24] = reason;
  return b;
}

/** A DATA datagram: header then `payload` (whole TS packets, already encrypted if so). */
export function encodeData(
  session: number,
  seq: number,
  timestamp: number,
  flags: number,
  payload: Buffer,
): Buffer {
  const b = header(DATA_HEADER_SIZE + payload.length, PacketType.data, session);
  b.writeUInt32BE(seq >>> 0, 8);
  b.writeUInt32BE(timestamp >>> 0, 12);
  b[16] = flags;
  payload.copy(b, DATA_HEADER_SIZE);
  return b;
}

/** Set the retransmission flag of a DATA datagram in place (the bytes are otherwise sent again
 *  unchanged: docs/ps1.md "Sender"). */
export function markRetransmission(datagram: Buffer): void {
  datagram[16] = (datagram[16] ?? 0) | DataFlag.retransmission;
}

export function encodeNack(session: number, ranges: readonly NackRange[]): Buffer {
  const n = Math.min(ranges.length, MAX_NACK_RANGES);
  const b = header(10 + 6 * n, PacketType.nack, session);
  b.writeUInt16BE(n, 8);
  for (let i = 0; i < n; i++) {
    const r = ranges[i]!;
    b.writeUInt32BE(r.first >>> 0, 10 + 6 * i);
    b.writeUInt16BE(Math.min(0xffff, r.count), 14 + 6 * i);
  }
  return b;
}

export function encodeAck(
  session: number,
  ackSeq: number,
  echo: number,
  rttUs: number,
  lost: number,
  recovered: number,
): Buffer {
  const b = header(28, PacketType.ack, session);
  b.writeUInt32BE(ackSeq >>> 0, 8);
  b.writeUInt32BE(echo >>> 0, 12);
  b.writeUInt32BE(Math.min(0xffffffff, Math.max(0, Math.round(rttUs))), 16);
  b.writeUInt32BE(lost >>> 0, 20);
  b.writeUInt32BE(recovered >>> 0, 24);
  return b;
}

export function encodeAckAck(session: number, echo: number): Buffer {
  const b = header(12, PacketType.ackack, session);
  b.writeUInt32BE(echo >>> 0, 8);
  return b;
}

export function encodeKeepalive(session: number): Buffer {
  return header(HEADER_SIZE, PacketType.keepalive, session);
}

export function encodeBye(session: number, reason: number): Buffer {
  const b = header(9, PacketType.bye, session);
  b[8] = reason;
  return b;
}

/** The session id of a datagram with a ps1 header, else -1 (cheap pre-check). */
export function sessionOf(d: Buffer): number {
  if (d.length < HEADER_SIZE || d.readUInt16BE(0) !== MAGIC) return -1;
  return d.readUInt32BE(4);
}

/** Read a datagram; null when it is not a well-formed ps1 packet of version 1 (a HELLO of any
 *  version is read, so the server can answer it with REJECT reason 1). */
export function decode(d: Buffer): Packet | null {
  if (d.length < HEADER_SIZE || d.readUInt16BE(0) !== MAGIC) return null;
  const version = d[2]!;
  const type = d[3]!;
  const session = d.readUInt32BE(4);
  if (type === PacketType.hello) {
    if (d.length < HELLO_SIZE || session !== 0) return null;
    return { type: 'hello', version, cnonce: d.subarray(8, 24), flags: d[24]! };
  }
  if (type === PacketType.reject) {
    if (d.length < 26) return null;
    return { type: 'reject', version, cnonce: d.subarray(8, 24), reason: d[24]! };
  }
  if (version !== VERSION) return null;
  switch (type) {
    case PacketType.challenge:
      if (d.length < 40) return null;
      return { type: 'challenge', cnonce: d.subarray(8, 24), snonce: d.subarray(24, 40) };
    case PacketType.auth: {
      if (d.length < 92) return null;
      const len = d[41]!;
      if (d.length < 92 + len) return null;
      return {
        type: 'auth',
        cnonce: d.subarray(8, 24),
        snonce: d.subarray(24, 40),
        flags: d[40]!,
        latencyMs: d.readUInt16BE(42),
        proof: d.subarray(44, 76),
        keyCheck: d.subarray(76, 92),
        login: d.toString('utf8', 92, 92 + len),
      };
    }
    case PacketType.accept:
      if (d.length < 58 || session === 0) return null;
      return {
        type: 'accept',
        session,
        cnonce: d.subarray(8, 24),
        proof: d.subarray(24, 56),
        bufferMs: d.readUInt16BE(56),
      };
    case PacketType.data: {
      const n = d.length - DATA_HEADER_SIZE;
      if (n <= 0 || n % TS_PACKET_SIZE !== 0 || n > MAX_TS_PER_DATA * TS_PACKET_SIZE) return null;
      return {
        type: 'data',
        session,
        seq: d.readUInt32BE(8),
        timestamp: d.readUInt32BE(12),
        flags: d[16]!,
        payload: d.subarray(DATA_HEADER_SIZE),
      };
    }
    case PacketType.nack: {
      if (d.length < 10) return null;
      const n = d.readUInt16BE(8);
      if (n < 1 || n > MAX_NACK_RANGES || d.length < 10 + 6 * n) return null;
      const ranges: NackRange[] = [];
      for (let i = 0; i < n; i++) {
        const count = d.readUInt16BE(14 + 6 * i);
        if (count < 1) return null;
        ranges.push({ first: d.readUInt32BE(10 + 6 * i), count });
      }
      return { type: 'nack', session, ranges };
    }
    case PacketType.ack:
      if (d.length < 28) return null;
      return {
        type: 'ack',
        session,
        ackSeq: d.readUInt32BE(8),
        echo: d.readUInt32BE(12),
        rttUs: d.readUInt32BE(16),
        lost: d.readUInt32BE(20),
        recovered: d.readUInt32BE(24),
      };
    case PacketType.ackack:
      if (d.length < 12) return null;
      return { type: 'ackack', session, echo: d.readUInt32BE(8) };
    case PacketType.keepalive:
      return { type: 'keepalive', session };
    case PacketType.bye:
      if (d.length < 9) return null;
      return { type: 'bye', session, reason: d[8]! };
    default:
      return null;
  }
}

/** Sorted sequence numbers → ranges of consecutive ones. */
export function toRanges(seqs: readonly number[]): NackRange[] {
  const out: NackRange[] = [];
  for (const s of seqs) {
    const last = out[out.length - 1];
    if (last && last.first + last.count === s && last.count < 0xffff) last.count++;
    else out.push({ first: s, count: 1 });
  }
  return out;
}
