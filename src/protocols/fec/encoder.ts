// SMPTE 2022-1 FEC generation: media RTP datagrams in (consecutive sequence numbers), row and
// column FEC packets out. A row FEC packet leaves as soon as its row of L packets is complete;
// column FEC packets are staggered over the next matrix (column c after c·D + 1 further media
// packets), so a burst that hits the media does not also take the column FEC that repairs it.
// Pure: the caller sends.
import { randomInt } from 'node:crypto';
import { buildFec, MAX_D, MAX_L, MAX_MATRIX, RTP_HEADER_SIZE, xorInto } from './header.ts';

export interface FecEncoderOptions {
  /** Columns (L, 1..20) and rows (D, 4..20 for column FEC; L × D ≤ 100). */
  l: number;
  d: number;
  /** Send row FEC too (2-D); false: column FEC only (1-D). */
  rows: boolean;
  /** prompeg-header-xor: the byte XORed over every FEC header (0 = standard). */
  xor: number;
}

/** The range each matrix dimension may take; checked here and in the output. */
export function checkMatrix(l: number, d: number): string {
  if (!Number.isInteger(l) || l < 1 || l > MAX_L) return `L (columns) must be 1..${MAX_L}`;
  if (!Number.isInteger(d) || d < 4 || d > MAX_D) return `D (rows) must be 4..${MAX_D}`;
  if (l * d > MAX_MATRIX) return `L × D must be at most ${MAX_MATRIX} (is ${l * d})`;
  return '';
}

class Accumulator {
  count = 0;
  snBase = 0;
  len = 0;
  pt = 0;
  ts = 0;
  pxcc = 0;
  marker = 0;
  size = 0;
  payload = Buffer.alloc(1500);

  add(p: Buffer): void {
    const n = p.length - RTP_HEADER_SIZE;
    if (this.count === 0) {
      this.snBase = p.readUInt16BE(2);
      this.len = this.pt = this.ts = this.pxcc = this.marker = this.size = 0;
      this.payload.fill(0);
    }
    if (n > this.payload.length) {
      const grown = Buffer.alloc(n);
      this.payload.copy(grown);
      this.payload = grown;
    }
    xorInto(this.payload, p.subarray(RTP_HEADER_SIZE), n);
    this.size = Math.max(this.size, n);
    this.len ^= n;
    this.pt ^= p[1]! & 0x7f;
    this.ts = (this.ts ^ p.readUInt32BE(4)) >>> 0;
    this.pxcc ^= p[0]! & 0x3f;
    this.marker ^= p[1]! >> 7;
    this.count++;
  }
}

export class FecEncoder {
  private readonly row = new Accumulator();
  private readonly columns: Accumulator[];
  private column = 0;
  private rowSeq = randomInt(0, 0x10000);
  private columnSeq = randomInt(0, 0x10000);
  /** Column FEC packets waiting for their turn: sent after `after` more media packets. */
  private queued: { after: number; build: (ts: number) => Buffer }[] = [];
  private lastTs = 0;
  sentColumns = 0;
  sentRows = 0;

  constructor(
    private readonly o: FecEncoderOptions,
    private readonly send: (kind: 'column' | 'row', datagram: Buffer) => void,
  ) {
    const bad = checkMatrix(o.l, o.d);
    if (bad) throw new Error(bad);
    this.columns = Array.from({ length: o.l }, () => new Accumulator());
  }

  /** One media datagram, as sent (after any encryption: FEC protects the bytes on the wire). */
  push(p: Buffer): void {
    this.lastTs = p.readUInt32BE(4);
    for (const q of this.queued) q.after--;
    while (this.queued.length && this.queued[0]!.after <= 0) {
      this.send('column', this.queued.shift()!.build(this.lastTs));
      this.sentColumns++;
    }
    const { l, d } = this.o;
    if (this.o.rows) {
      this.row.add(p);
      if (this.row.count === l) {
        this.send('row', this.packet(this.row, true, this.lastTs));
        this.sentRows++;
        this.row.count = 0;
      }
    }
    const col = this.columns[this.column]!;
    col.add(p);
    if (col.count === d) {
      // Freeze the fields now (the accumulator is reused by the next matrix).
      const frozen = this.freeze(col);
      const c = this.column;
      this.queued.push({ after: 1 + c * d, build: (ts) => this.packet(frozen, false, ts) });
      col.count = 0;
    }
    this.column = (this.column + 1) % l;
  }

  private freeze(a: Accumulator): Accumulator {
    const f = new Accumulator();
    Object.assign(f, a, { payload: Buffer.from(a.payload.subarray(0, a.size)) });
    return f;
  }

  private packet(a: Accumulator, row: boolean, ts: number): Buffer {
    const seq = row ? this.rowSeq++ : this.columnSeq++;
    this.rowSeq &= 0xffff;
    this.columnSeq &= 0xffff;
    return buildFec(
      {
        row,
        seq,
        timestamp: ts,
        ssrc: 0,
        snBase: a.snBase,
        offset: row ? 1 : this.o.l,
        na: row ? this.o.l : this.o.d,
        lengthRecovery: a.len,
        ptRecovery: a.pt,
        tsRecovery: a.ts,
        pxccRecovery: a.pxcc,
        markerRecovery: a.marker,
        payload: a.payload.subarray(0, a.size),
      },
      this.o.xor,
    );
  }
}
