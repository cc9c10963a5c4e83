// T2-MI decapsulation (ETSI TS 102 773): the inner transport streams of a DVB-T2 multiplex out
// of the carrier PID that brings its modulator interface packets. Pure: bytes in, bytes out.
//
// Carrier: T2-MI packets are cut into the carrier PID's TS payloads back to back, a packet
// whose payload_unit_start_indicator is set has a pointer_field (as PSI sections do) giving
// where the first T2-MI packet starting in it begins. A T2-MI packet is a 6-byte header
// (packet_type, packet_count, superframe_idx / t2mi_stream_id, payload_length in bits), the
// payload padded to whole bytes, and a CRC-32 (MPEG-2) over header and payload.
//
// Baseband frame packets (type 0x00) carry frame_idx, PLP_id, intl_frame_start and a BBFrame:
// the BBHEADER (EN 302 755 5.1.7: MATYPE, UPL, DFL, SYNC, SYNCD, CRC-8 ^ MODE) and the data
// field of user packets (UPs) of the PLP's inner TS. Normal mode (NM): a UP is 188 bytes, its
// sync byte replaced by the CRC-8 of the UP before, then the ISSY field when ISSYI is set and
// the DNP byte when NPD is set. High efficiency mode (HEM): a UP is the 187 bytes after the
// sync byte, then DNP when NPD is set (ISSY travels in the header). SYNCD is the distance in
// bits from the data field's start to the first UP beginning in it (0xFFFF: none), the bytes
// before it end the UP the previous frame of the PLP left open. DNP counts the null packets
// deleted before its UP: as many null packets are put back in front of it.
import { crc32 } from './crc.ts';
import {
  cc,
  hasPayload,
  NULL_PID,
  PAT_PID,
  payloadOffset,
  pid as pidOf,
  pusi,
  SYNC_BYTE,
  TEI_FLAG,
  TS_PACKET_SIZE,
} from './packet.ts';
import {
  PAT_TABLE_ID,
  PMT_TABLE_ID,
  parseDescriptors,
  parsePat,
  parsePmt,
  parseSectionHeader,
} from './psi.ts';
import { SectionReader } from './section-reader.ts';

export const T2MI_HEADER_SIZE = 6;
export const T2MI_CRC_SIZE = 4;
export const T2MI_TYPE_BBFRAME = 0x00;
/** frame_idx, PLP_id, intl_frame_start + rfu before the BBFrame of a type 0x00 packet. */
export const BBFRAME_PREFIX_SIZE = 3;
export const BBHEADER_SIZE = 10;
/** stream_type of a T2-MI carrier in the PMT (PES private data), with the T2MI_descriptor. */
export const T2MI_STREAM_TYPE = 0x06;
/** extension_descriptor (EN 300 468 6.2.16) and its T2MI_descriptor tag extension (6.4.14). */
export const DESCRIPTOR_EXTENSION = 0x7f;
export const EXTENSION_T2MI = 0x11;
/** The largest T2-MI packet: payload_length is 16 bits (in bits). */
const MAX_T2MI_PACKET = T2MI_HEADER_SIZE + 0x2000 + T2MI_CRC_SIZE;
const MATYPE_TS = 0x03;
const MATYPE_ISSYI = 0x08;
const MATYPE_NPD = 0x04;
/** UPL of a TS in normal mode: 188 bytes, in bits. */
const UPL_TS_BITS = TS_PACKET_SIZE * 8;
const NO_SYNC = 0xffff;
const MODE_HEM = 0x01;
/** ISSY in a UP: 3 bytes when its first bit is set (ISCRlong, BUFS, TTO), else 2 (ISCRshort). */
const ISSY_LONG_FLAG = 0x80;
const UP_BODY = TS_PACKET_SIZE - 1;

// CRC-8 of the BBHEADER (EN 302 755 5.1.4: g(X) = X^8 + X^7 + X^6 + X^4 + X^2 + 1, MSB first,
// register starting at 0).
const CRC8_TABLE = (() => {
  const t = new Uint8Array(256);
  for (let i = 0; i < 256; i++) {
    let c = i;
    for (let k = 0; k < 8; k++) c = c & 0x80 ? ((c << 1) ^ 0xd5) & 0xff : (c << 1) & 0xff;
    t[i] = c;
  }
  return t;
})();

export function crc8(b: Uint8Array, start: number, end: number): number {
  let c = 0;
  for (let i = start; i < end; i++) c = CRC8_TABLE[c ^ b[i]!]!;
  return c;
}

export interface T2miStats {
  /** The carrier PID read (-1: none yet). */
  pid: number;
  /** T2-MI packets with a good CRC. */
  t2miPackets: number;
  /** Baseband frame packets among them. */
  bbFrames: number;
  /** T2-MI packets whose CRC-32 failed (dropped). */
  crcErrors: number;
  /** T2-MI packets missing by packet_count. */
  lostPackets: number;
  /** BBFrames refused: BBHEADER CRC-8, not a TS, a UPL or SYNCD out of bounds. */
  badFrames: number;
  /** T2-MI packets cut short (continuity break, a new one started before its end, a data field
   *  longer than the packet). */
  truncated: number;
}

export interface PlpStats {
  plp: number;
  bbFrames: number;
  /** Inner TS packets out, null packets put back included. */
  packetsOut: number;
  /** Null packets put back (DNP). */
  nullsInserted: number;
  /** Partial UPs dropped: a frame lost before its end, or a SYNCD that did not meet it. */
  resyncs: number;
  /** The mode the last frame used. */
  mode: 'normal' | 'high-efficiency' | 'unknown';
}

/** One PLP's inner TS rebuilt from its BBFrames, batched until flush(). */
class PlpReader {
  readonly s: PlpStats;
  private up = Buffer.alloc(TS_PACKET_SIZE + 4);
  private have = 0;
  /** Length of the UP in progress once known (ISSY length comes with its first byte). */
  private need = 0;
  private synced = false;
  private hem = false;
  private issy = false;
  private npd = false;
  private out = Buffer.allocUnsafe(TS_PACKET_SIZE * 64);
  private len = 0;

  constructor(
    plp: number,
    private readonly sink: (ts: Buffer) => void,
  ) {
    this.s = { plp, bbFrames: 0, packetsOut: 0, nullsInserted: 0, resyncs: 0, mode: 'unknown' };
  }

  /** Forget the UP in progress (a T2-MI packet lost, the carrier spliced). */
  lose(): void {
    if (this.synced && this.have > 0) this.s.resyncs++;
    this.synced = false;
    this.have = 0;
  }

  /** The BBFrame at [o, end) of `b`, its header checked by the caller. */
  frame(b: Buffer, o: number, dfl: number, syncd: number, hem: boolean, m: number): void {
    this.s.bbFrames++;
    this.s.mode = hem ? 'high-efficiency' : 'normal';
    const issy = !hem && (m & MATYPE_ISSYI) !== 0;
    const npd = (m & MATYPE_NPD) !== 0;
    if (hem !== this.hem || issy !== this.issy || npd !== this.npd) {
      this.lose(); // the UP layout changed: what was open cannot be finished
      this.hem = hem;
      this.issy = issy;
      this.npd = npd;
    }
    const data = o + BBHEADER_SIZE;
    const end = data + dfl;
    if (syncd === NO_SYNC) {
      if (this.synced) this.feed(b, data, end);
      return;
    }
    const first = data + syncd;
    if (this.synced) {
      this.feed(b, data, first);
      if (this.have > 0) this.lose(); // the open UP did not end where the next one begins
    }
    this.synced = true;
    this.have = 0;
    this.need = 0;
    this.feed(b, first, end);
  }

  private upLength(): number {
    const base = this.hem ? UP_BODY : TS_PACKET_SIZE;
    if (!this.issy) return base + (this.npd ? 1 : 0);
    if (this.have <= base) return base + 1; // the first ISSY byte tells its length
    const issyLen = this.up[base]! & ISSY_LONG_FLAG ? 3 : 2;
    return base + issyLen + (this.npd ? 1 : 0);
  }

  private feed(b: Buffer, i: number, end: number): void {
    while (i < end) {
      if (this.need === 0 || this.have >= this.need) this.need = this.upLength();
      const n = Math.min(end - i, this.need - this.have);
      b.copy(this.up, this.have, i, i + n);
      this.have += n;
      i += n;
      if (this.have < this.need) continue;
      const need = this.upLength();
      if (need !== this.need) {
        this.need = need; // the ISSY length is known now
        continue;
      }
      this.emit();
      this.have = 0;
      this.need = 0;
    }
  }

  private emit(): void {
    const body = this.hem ? 0 : 1;
    if (this.npd) {
      const dnp = this.up[this.need - 1]!;
      for (let k = 0; k < dnp; k++) this.writeNull();
      this.s.nullsInserted += dnp;
    }
    this.room(TS_PACKET_SIZE);
    this.out[this.len] = SYNC_BYTE;
    this.up.copy(this.out, this.len + 1, body, body + UP_BODY);
    this.len += TS_PACKET_SIZE;
  }

  private writeNull(): void {
    this.room(TS_PACKET_SIZE);
    const o = this.len;
    this.out[o] = SYNC_BYTE;
    this.out[o + 1] = NULL_PID >> 8;
    this.out[o + 2] = NULL_PID & 0xff;
    this.out[o + 3] = 0x10;
    this.out.fill(0xff, o + 4, o + TS_PACKET_SIZE);
    this.len += TS_PACKET_SIZE;
  }

  private room(n: number): void {
    if (this.len + n <= this.out.length) return;
    const bigger = Buffer.allocUnsafe(Math.max(this.out.length * 2, this.len + n));
    this.out.copy(bigger, 0, 0, this.len);
    this.out = bigger;
  }

  flush(): void {
    if (this.len === 0) return;
    const n = this.len;
    this.len = 0;
    this.s.packetsOut += n / TS_PACKET_SIZE;
    this.sink(this.out.subarray(0, n));
  }
}

/** Reads one carrier PID; hands each wanted PLP's inner TS to its sink. */
export class T2miDecapsulator {
  private readonly s: T2miStats;
  private buf = Buffer.alloc(MAX_T2MI_PACKET * 2);
  private have = 0;
  private synced = false;
  private lastCc = -1;
  private lastCount = -1;
  private plps = new Map<number, PlpReader>();

  constructor(private pid: number) {
    this.s = {
      pid,
      t2miPackets: 0,
      bbFrames: 0,
      crcErrors: 0,
      lostPackets: 0,
      badFrames: 0,
      truncated: 0,
    };
  }

  /** Read PLP `plp` into `sink` (inner TS, N × 188 bytes a call, valid during the call). */
  addPlp(plp: number, sink: (ts: Buffer) => void): void {
    this.plps.set(plp, new PlpReader(plp, sink));
  }

  removePlp(plp: number): void {
    this.plps.delete(plp);
  }

  get size(): number {
    return this.plps.size;
  }

  stats(): T2miStats {
    return { ...this.s };
  }

  plpStats(plp: number): PlpStats | undefined {
    const r = this.plps.get(plp);
    return r ? { ...r.s } : undefined;
  }

  get carrierPid(): number {
    return this.pid;
  }

  /** Read another carrier PID from now on (-1: none); what was in progress is dropped. */
  retarget(pid: number): void {
    if (pid === this.pid) return;
    this.discontinuity();
    this.pid = pid;
    this.s.pid = pid;
  }

  /** The source spliced: everything in progress is dropped. */
  discontinuity(): void {
    this.loseSync();
    this.lastCc = -1;
    this.lastCount = -1;
  }

  private loseSync(): void {
    if (this.synced && this.have > 0) this.s.truncated++;
    this.synced = false;
    this.have = 0;
    for (const r of this.plps.values()) r.lose();
  }

  /** The TS packet at `o` of `b`, a packet of the carrier PID. */
  packet(b: Buffer, o: number): void {
    if ((b[o + 1]! & TEI_FLAG) !== 0 || !hasPayload(b, o)) return;
    const c = cc(b, o);
    if (c === this.lastCc) return; // a duplicate packet
    const continuous = this.lastCc < 0 || c === ((this.lastCc + 1) & 0x0f);
    this.lastCc = c;
    if (!continuous) this.loseSync();
    let i = o + payloadOffset(b, o);
    const end = o + TS_PACKET_SIZE;
    if (i >= end) return;
    if (pusi(b, o)) {
      const start = i + 1 + b[i]!;
      if (start > end) {
        this.loseSync();
        return;
      }
      if (this.synced) {
        this.append(b, i + 1, start);
        if (this.have > 0) this.loseSync(); // a packet was left unfinished where the next begins
      }
      this.synced = true;
      this.have = 0;
      i = start;
    } else if (!this.synced) return;
    this.append(b, i, end);
  }

  private append(b: Buffer, i: number, end: number): void {
    const n = end - i;
    if (n <= 0) return;
    if (this.have + n > this.buf.length) {
      this.loseSync(); // cannot happen with well-formed lengths; guards the buffer
      return;
    }
    b.copy(this.buf, this.have, i, end);
    this.have += n;
    let at = 0;
    while (this.have - at >= T2MI_HEADER_SIZE) {
      const bits = this.buf.readUInt16BE(at + 4);
      const size = T2MI_HEADER_SIZE + ((bits + 7) >> 3) + T2MI_CRC_SIZE;
      if (this.have - at < size) break;
      this.t2miPacket(at, size, bits);
      at += size;
    }
    if (at > 0) {
      this.buf.copy(this.buf, 0, at, this.have);
      this.have -= at;
    }
  }

  private t2miPacket(o: number, size: number, bits: number): void {
    const b = this.buf;
    if (crc32(b, o, o + size - T2MI_CRC_SIZE) !== b.readUInt32BE(o + size - T2MI_CRC_SIZE)) {
      this.s.crcErrors++;
      return;
    }
    this.s.t2miPackets++;
    const count = b[o + 1]!;
    if (this.lastCount >= 0) {
      const gap = (count - this.lastCount - 1) & 0xff;
      if (gap > 0) {
        this.s.lostPackets += gap;
        for (const r of this.plps.values()) r.lose();
      }
    }
    this.lastCount = count;
    if (b[o]! !== T2MI_TYPE_BBFRAME) return;
    this.s.bbFrames++;
    const payload = o + T2MI_HEADER_SIZE;
    const payloadEnd = payload + (bits >> 3);
    const bb = payload + BBFRAME_PREFIX_SIZE;
    if (payloadEnd < bb + BBHEADER_SIZE) {
      this.s.truncated++;
      return;
    }
    const r = this.plps.get(b[payload + 1]!);
    if (!r) return;
    const m = b[bb]!;
    const crc = crc8(b, bb, bb + BBHEADER_SIZE - 1);
    const mode = crc ^ b[bb + BBHEADER_SIZE - 1]!;
    if (mode > MODE_HEM || m >> 6 !== MATYPE_TS) {
      this.s.badFrames++;
      r.lose();
      return;
    }
    const hem = mode === MODE_HEM;
    const dflBits = b.readUInt16BE(bb + 4);
    const syncdBits = b.readUInt16BE(bb + 7);
    if (
      (!hem && b.readUInt16BE(bb + 2) !== UPL_TS_BITS) ||
      dflBits % 8 !== 0 ||
      (syncdBits !== NO_SYNC && (syncdBits % 8 !== 0 || syncdBits > dflBits))
    ) {
      this.s.badFrames++;
      r.lose();
      return;
    }
    if (bb + BBHEADER_SIZE + dflBits / 8 > payloadEnd) {
      this.s.truncated++;
      r.lose();
      return;
    }
    const syncd = syncdBits === NO_SYNC ? NO_SYNC : syncdBits / 8;
    r.frame(b, bb, dflBits / 8, syncd, hem, m);
  }

  /** Hand this batch's inner TS over, PLP by PLP. */
  flush(): void {
    for (const r of this.plps.values()) r.flush();
  }
}

/** Whether an ES_info descriptor loop has a T2MI_descriptor. */
export function hasT2miDescriptor(loop: Buffer): boolean {
  return parseDescriptors(loop).some(
    (d) => d.tag === DESCRIPTOR_EXTENSION && d.data.length >= 1 && d.data[0] === EXTENSION_T2MI,
  );
}

export type CarrierState = 'unknown' | 'found' | 'absent';

/** PIDs 0x0000–0x001F carry tables, never a PMT or a carrier. */
const LAST_TABLE_PID = 0x1f;

/**
 * Finds the T2-MI carrier of a multiplex from its tables: the PAT, then every PMT it lists;
 * a carrier is an elementary stream of stream_type 0x06 with a T2MI_descriptor. Several
 * carriers: the lowest PID. `absent` once every PMT of a complete PAT was read without one.
 */
export class T2miCarrierFinder {
  state: CarrierState = 'unknown';
  carrier = -1;
  private readers = new Map<number, SectionReader>();
  /** PMT PID → carriers its programme's PMTs signal (one entry per programme). */
  private pmts = new Map<number, Map<number, number[]>>();
  private patVersion = -1;
  private patSections = new Map<number, Map<number, number>>();
  private patLast = 0;
  crcErrors = 0;

  constructor(private readonly onChange: (pid: number) => void) {
    this.readers.set(PAT_PID, new SectionReader((s) => this.onPat(s)));
  }

  /** The packet at `o` of `b`: read when it is the PAT or a PMT. */
  packet(b: Buffer, o: number): void {
    this.readers.get(pidOf(b, o))?.packet(b, o);
  }

  reset(): void {
    for (const r of this.readers.values()) r.reset();
  }

  private onPat(s: Buffer): void {
    const h = parseSectionHeader(s);
    if (h.tableId !== PAT_TABLE_ID || !h.currentNext) return;
    if (h.version !== this.patVersion) {
      this.patVersion = h.version;
      this.patSections.clear();
    }
    this.patLast = h.lastSectionNumber;
    const m = new Map<number, number>();
    for (const p of parsePat(s).programs) {
      if (p.programNumber !== 0 && p.pid > LAST_TABLE_PID && p.pid !== NULL_PID) {
        m.set(p.programNumber, p.pid);
      }
    }
    this.patSections.set(h.sectionNumber, m);
    for (let i = 0; i <= this.patLast; i++) if (!this.patSections.has(i)) return;
    const want = new Set<number>();
    for (const sec of this.patSections.values()) for (const pid of sec.values()) want.add(pid);
    for (const pid of [...this.readers.keys()]) {
      if (pid !== PAT_PID && !want.has(pid)) {
        this.crcErrors += this.readers.get(pid)!.stats.crcErrors;
        this.readers.delete(pid);
        this.pmts.delete(pid);
      }
    }
    for (const pid of want) {
      if (!this.readers.has(pid)) {
        this.readers.set(pid, new SectionReader((sec) => this.onPmt(pid, sec)));
      }
    }
    this.decide();
  }

  private onPmt(pid: number, s: Buffer): void {
    const h = parseSectionHeader(s);
    if (h.tableId !== PMT_TABLE_ID || !h.currentNext) return;
    const carriers = parsePmt(s)
      .streams.filter(
        (st) =>
          st.streamType === T2MI_STREAM_TYPE &&
          st.pid > LAST_TABLE_PID &&
          st.pid !== NULL_PID &&
          hasT2miDescriptor(st.descriptors),
      )
      .map((st) => st.pid);
    let m = this.pmts.get(pid);
    if (!m) {
      m = new Map();
      this.pmts.set(pid, m);
    }
    m.set(h.tableIdExtension, carriers);
    this.decide();
  }

  private decide(): void {
    let best = -1;
    for (const m of this.pmts.values()) {
      for (const list of m.values()) for (const p of list) if (best < 0 || p < best) best = p;
    }
    let state: CarrierState = best >= 0 ? 'found' : 'unknown';
    if (best < 0 && this.patVersion >= 0) {
      const pmtPids = [...this.readers.keys()].filter((p) => p !== PAT_PID);
      if (pmtPids.every((p) => this.pmts.has(p))) state = 'absent';
    }
    this.state = state;
    if (best !== this.carrier) {
      this.carrier = best;
      this.onChange(best);
    }
  }
}

export interface T2miReaderOptions {
  /** The carrier PID (manual mode); absent: found from the tables (automatic mode). */
  carrierPid?: number;
}

export interface T2miReaderStats extends T2miStats {
  mode: 'manual' | 'automatic';
  carrier: CarrierState;
  /** TS packets of the multiplex read. */
  packetsIn: number;
}

/** A carrier found (or given) in a multiplex and decapsulated, PLP by PLP. */
export class T2miReader {
  private readonly decap: T2miDecapsulator;
  private readonly finder: T2miCarrierFinder | null;
  private packetsIn = 0;

  constructor(opts: T2miReaderOptions = {}) {
    const manual = opts.carrierPid !== undefined;
    this.decap = new T2miDecapsulator(manual ? opts.carrierPid! : -1);
    this.finder = manual ? null : new T2miCarrierFinder((pid) => this.decap.retarget(pid));
  }

  get size(): number {
    return this.decap.size;
  }

  addPlp(plp: number, sink: (ts: Buffer) => void): void {
    this.decap.addPlp(plp, sink);
  }

  removePlp(plp: number): void {
    this.decap.removePlp(plp);
  }

  plpStats(plp: number): PlpStats | undefined {
    return this.decap.plpStats(plp);
  }

  carrierState(): CarrierState {
    return this.finder ? this.finder.state : 'found';
  }

  stats(): T2miReaderStats {
    return {
      mode: this.finder ? 'automatic' : 'manual',
      carrier: this.carrierState(),
      packetsIn: this.packetsIn,
      ...this.decap.stats(),
    };
  }

  /** Aligned packets of the multiplex (N × 188 bytes); the PLPs' sinks are called at the end. */
  push(b: Buffer): void {
    const end = b.length - (b.length % TS_PACKET_SIZE);
    for (let o = 0; o < end; o += TS_PACKET_SIZE) {
      this.packetsIn++;
      const p = pidOf(b, o);
      if (p === this.decap.carrierPid) this.decap.packet(b, o);
      else this.finder?.packet(b, o);
    }
    this.decap.flush();
  }

  discontinuity(): void {
    this.decap.discontinuity();
    this.finder?.reset();
  }
}
