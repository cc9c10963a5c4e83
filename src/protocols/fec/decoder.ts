// SMPTE 2022-1 FEC recovery: media RTP datagrams and row/column FEC packets in, recovered media
// datagrams out. Media is kept in a ring of the last RING sequence numbers; a FEC packet that
// finds exactly one of its packets missing rebuilds it by XOR, and every recovery is tried again
// on the FEC packets still waiting (a row fills a column's hole and the other way round), so 2-D
// FEC repairs what neither direction alone could. Pure: no I/O, no clock.
import { seqDelta } from '../rtp/packet.ts';
import { type FecPacket, MAX_MATRIX, RTP_HEADER_SIZE, xorInto } from './header.ts';

/** Media sequence numbers remembered (a power of two, > 2 matrices of the largest size). */
const RING = 1024;
const MASK = RING - 1;
/** FEC for packets further back than this is too old to use (well inside the ring). */
const HISTORY = RING - 2 * MAX_MATRIX;
/** FEC may arrive before the last media it protects (other socket, other path): this far. */
const AHEAD = 2 * MAX_MATRIX;
/** FEC packets waiting for a second hole to fill, at most (forged ones cannot pile up). */
const MAX_PENDING = 256;
/** A media sequence jump beyond this is a new sequence (sender restart): start over. */
const RESTART_JUMP = 3000;

export interface FecDecoderStats {
  /** Media packets stored (duplicates not counted). */
  media: number;
  duplicates: number;
  fecColumns: number;
  fecRows: number;
  /** Media packets rebuilt, in all and by the direction that rebuilt them. */
  recovered: number;
  recoveredByColumn: number;
  recoveredByRow: number;
  /** FEC packets dropped: before any media, too far from the media, or duplicated. */
  fecOutOfWindow: number;
  /** FEC packets whose recovery fields contradict the media (longer bodies than the FEC). */
  fecInconsistent: number;
  restarts: number;
}

interface Pending {
  fec: FecPacket;
  key: number;
}

export class FecDecoder {
  private readonly ringSeq = new Int32Array(RING).fill(-1);
  private readonly ringData: (Buffer | undefined)[] = new Array(RING);
  private highest = -1;
  private ssrc = 0;
  private readonly pending = new Map<number, Pending>();
  /** Matrix seen in the FEC headers: L columns, D rows (0 until known). */
  l = 0;
  d = 0;
  readonly stats: FecDecoderStats = {
    media: 0,
    duplicates: 0,
    fecColumns: 0,
    fecRows: 0,
    recovered: 0,
    recoveredByColumn: 0,
    recoveredByRow: 0,
    fecOutOfWindow: 0,
    fecInconsistent: 0,
    restarts: 0,
  };

  /** `emit` gets each recovered media datagram (RTP header rebuilt, the media's SSRC). */
  constructor(private readonly emit: (datagram: Buffer) => void) {}

  /** Packets a reorder buffer should wait for a hole before giving it up: a hole in the first
   *  row's last column is repaired by a column FEC sent (staggered) up to a matrix after the
   *  matrix's end, so about 2·L·D + L later packets; REORDER_DEPTH-like 32 until known. */
  window(): number {
    if (!this.l) return 32;
    const d = Math.max(this.d, 1);
    return Math.max(32, 2 * this.l * d + this.l);
  }

  /** A media RTP datagram (parsed by the caller: seq, ssrc). Returns false for a duplicate
   *  (already received or recovered): the caller does not deliver it again. */
  pushMedia(d: Buffer, seq: number, ssrc: number): boolean {
    if (this.highest < 0 || ssrc !== this.ssrc) this.restart(seq, ssrc);
    else {
      const delta = seqDelta(this.highest, seq);
      if (delta > RESTART_JUMP || delta < -HISTORY) this.restart(seq, ssrc);
    }
    const slot = seq & MASK;
    if (this.ringSeq[slot] === seq) {
      this.stats.duplicates++;
      return false;
    }
    this.ringSeq[slot] = seq;
    this.ringData[slot] = d;
    this.stats.media++;
    if (seqDelta(this.highest, seq) > 0) this.highest = seq;
    if (this.pending.size) this.resolvePending();
    return true;
  }

  /** A parsed FEC packet (row or column). */
  pushFec(f: FecPacket): void {
    if (f.row) this.stats.fecRows++;
    else this.stats.fecColumns++;
    const last = (f.snBase + f.offset * (f.na - 1)) & 0xffff;
    if (
      this.highest < 0 ||
      seqDelta(this.highest, f.snBase) < -HISTORY ||
      seqDelta(this.highest, last) > AHEAD
    ) {
      this.stats.fecOutOfWindow++;
      return;
    }
    if (f.row) {
      if (!this.l) this.l = f.na;
    } else {
      this.l = f.offset;
      this.d = f.na;
    }
    const key = (f.row ? 0x10000 : 0) | f.snBase;
    if (this.pending.has(key)) {
      this.stats.fecOutOfWindow++;
      return;
    }
    const r = this.tryFec(f);
    if (r === 'wait') {
      if (this.pending.size >= MAX_PENDING) {
        const oldest = this.pending.keys().next().value as number;
        this.pending.delete(oldest);
      }
      this.pending.set(key, { fec: f, key });
    } else if (r === 'recovered') this.resolvePending();
  }

  /** Forget everything (the input closes or the sender restarted). */
  reset(): void {
    this.ringSeq.fill(-1);
    this.ringData.fill(undefined);
    this.pending.clear();
    this.highest = -1;
  }

  private restart(seq: number, ssrc: number): void {
    if (this.highest >= 0) this.stats.restarts++;
    this.reset();
    this.highest = seq;
    this.ssrc = ssrc;
  }

  private has(seq: number): boolean {
    return this.ringSeq[seq & MASK] === seq;
  }

  /** Try the waiting FEC packets again until none recovers anything more. */
  private resolvePending(): void {
    for (let progress = true; progress; ) {
      progress = false;
      for (const p of this.pending.values()) {
        const r = this.tryFec(p.fec);
        if (r === 'wait') continue;
        this.pending.delete(p.key);
        if (r === 'recovered') progress = true;
      }
    }
  }

  /** 'done': nothing missing (or unusable, or too old); 'wait': more than one packet missing,
   *  or the one missing may still be on its way (no later packet yet); 'recovered'. */
  private tryFec(f: FecPacket): 'done' | 'wait' | 'recovered' {
    if (seqDelta(this.highest, f.snBase) < -HISTORY) return 'done';
    let missing = -1;
    for (let i = 0; i < f.na; i++) {
      const s = (f.snBase + i * f.offset) & 0xffff;
      if (this.has(s)) continue;
      if (missing >= 0) return 'wait';
      missing = s;
    }
    if (missing < 0) return 'done';
    if (seqDelta(this.highest, missing) >= 0) return 'wait';
    return this.recover(f, missing) ? 'recovered' : 'done';
  }

  private recover(f: FecPacket, seq: number): boolean {
    const body = Buffer.from(f.payload);
    let len = f.lengthRecovery;
    let pt = f.ptRecovery;
    let ts = f.tsRecovery;
    let pxcc = f.pxccRecovery;
    let marker = f.markerRecovery;
    for (let i = 0; i < f.na; i++) {
      const s = (f.snBase + i * f.offset) & 0xffff;
      if (s === seq) continue;
      const p = this.ringData[s & MASK]!;
      const n = p.length - RTP_HEADER_SIZE;
      if (n > body.length) {
        this.stats.fecInconsistent++;
        return false;
      }
      xorInto(body, p.subarray(RTP_HEADER_SIZE), n);
      len ^= n;
      pt ^= p[1]! & 0x7f;
      ts = (ts ^ p.readUInt32BE(4)) >>> 0;
      pxcc ^= p[0]! & 0x3f;
      marker ^= p[1]! >> 7;
    }
    if (len > body.length) {
      this.stats.fecInconsistent++;
      return false;
    }
    const d = Buffer.allocUnsafe(RTP_HEADER_SIZE + len);
    d[0] = 0x80 | (pxcc & 0x3f);
    d[1] = ((marker & 1) << 7) | (pt & 0x7f);
    d.writeUInt16BE(seq, 2);
    d.writeUInt32BE(ts, 4);
    d.writeUInt32BE(this.ssrc >>> 0, 8);
    body.copy(d, RTP_HEADER_SIZE, 0, len);
    const slot = seq & MASK;
    this.ringSeq[slot] = seq;
    this.ringData[slot] = d;
    this.stats.recovered++;
    if (f.row) this.stats.recoveredByRow++;
    else this.stats.recoveredByColumn++;
    this.emit(d);
    return true;
  }
}
