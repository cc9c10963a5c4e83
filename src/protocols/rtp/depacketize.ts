// RTP payload formats → codec frames, no I/O: H.264 (RFC 6184: single NAL unit, STAP-A, FU-A),
// HEVC (RFC 7798: single NAL unit, AP, FU; without DONL, i.e. sprop-max-don-diff 0), AAC
// (RFC 3640 mpeg4-generic, AU headers of sizeLength + indexLength/indexDeltaLength bits, AUs
// fragmented over packets) and MPEG-TS (RFC 2250, passed through). Video access units end at
// the marker bit or a change of RTP timestamp and come out in Annex B (4-byte start codes).
// Packets arrive in sequence order (the owner reorders if it must); a sequence gap inside an
// access unit drops that access unit (counted in `dropped`), so no corrupt frame is muxed.
import { type RtpPacket, seqDelta } from './packet.ts';

/** A frame larger than this is dropped (no real access unit is near it). */
export const MAX_FRAME_BYTES = 8 * 1024 * 1024;
/** AAC access units in one packet beyond this are ignored (a forged AU-headers-length). */
const MAX_AUS_PER_PACKET = 64;
const START_CODE = Buffer.from([0, 0, 0, 1]);

export interface RtpFrame {
  /** RTP timestamp (32-bit, the track's clock) of this frame. */
  timestamp: number;
  data: Buffer;
  /** Contains an IDR / IRAP picture (video); audio and TS frames are always key. */
  key: boolean;
}

export interface DepacketizerStats {
  packets: number;
  frames: number;
  /** Packets missing by sequence number. */
  lost: number;
  /** Frames dropped: incomplete (a lost fragment), too large, or malformed. */
  dropped: number;
  /** Packets of a packetization this build does not take (STAP-B, MTAP, FU-B, PACI …). */
  unsupported: number;
}

export interface Depacketizer {
  push(p: RtpPacket): void;
  readonly stats: DepacketizerStats;
}

abstract class Base implements Depacketizer {
  readonly stats: DepacketizerStats = {
    packets: 0,
    frames: 0,
    lost: 0,
    dropped: 0,
    unsupported: 0,
  };
  private lastSeq = -1;

  constructor(protected readonly emit: (f: RtpFrame) => void) {}

  push(p: RtpPacket): void {
    this.stats.packets++;
    let gap = false;
    if (this.lastSeq >= 0) {
      const d = seqDelta(this.lastSeq, p.seq);
      if (d <= 0 && d > -100) return; // duplicate or late: already past it
      if (d > 1) {
        this.stats.lost += d - 1;
        gap = true;
      }
    }
    this.lastSeq = p.seq;
    this.packet(p, gap);
  }

  protected abstract packet(p: RtpPacket, gap: boolean): void;
}

/** H.264 and HEVC: NAL units gathered into access units. */
abstract class VideoDepacketizer extends Base {
  private nals: Buffer[] = [];
  private bytes = 0;
  private ts = -1;
  private broken = false;
  private key = false;
  /** A fragmented NAL unit being reassembled. */
  private fu: Buffer[] | null = null;
  private fuBytes = 0;
  /** A packet of the access unit under way has been read. */
  private started = false;

  protected packet(p: RtpPacket, gap: boolean): void {
    // A lost packet may be the tail of the access unit under way or the head of the next one
    // (or both): each of them that may miss bytes is dropped.
    const pending = this.started;
    if (gap && pending) this.broken = true;
    if (pending && p.timestamp !== this.ts) this.finish();
    if (gap) {
      this.broken = true;
      this.fu = null;
    }
    this.ts = p.timestamp;
    this.started = true;
    if (p.payload.length > 0) this.unpack(p.payload);
    if (p.marker) this.finish();
  }

  /** Bytes held for the access unit under way (bounded by MAX_FRAME_BYTES). */
  get holding(): number {
    let n = 0;
    for (const x of this.nals) n += x.length;
    return n + (this.fu ? this.fuBytes : 0);
  }

  protected abstract unpack(payload: Buffer): void;
  protected abstract isKey(nal: Buffer): boolean;

  protected nal(n: Buffer): void {
    if (n.length === 0) return;
    this.bytes += n.length + 4;
    // Past the bound nothing more is held: the access unit is dropped when it ends.
    if (this.bytes > MAX_FRAME_BYTES) {
      this.broken = true;
      this.nals = [];
      return;
    }
    this.nals.push(n);
    if (this.isKey(n)) this.key = true;
  }

  protected fuStart(header: Buffer, data: Buffer): void {
    if (this.fu) this.broken = true; // the previous one never ended
    this.fu = [header, data];
    this.fuBytes = header.length + data.length;
  }

  protected fuMore(data: Buffer, end: boolean): void {
    if (!this.fu) {
      // A middle or end fragment without its start: the start was lost.
      this.broken = true;
      return;
    }
    this.fu.push(data);
    this.fuBytes += data.length;
    if (this.bytes + this.fuBytes > MAX_FRAME_BYTES) {
      this.broken = true;
      this.fu = null;
      this.nals = [];
      return;
    }
    if (end) {
      this.nal(Buffer.concat(this.fu));
      this.fu = null;
    }
  }

  protected malformed(): void {
    this.broken = true;
  }

  private finish(): void {
    if (this.fu) {
      this.broken = true;
      this.fu = null;
    }
    if (this.nals.length > 0) {
      if (this.broken) this.stats.dropped++;
      else {
        const parts: Buffer[] = [];
        for (const n of this.nals) parts.push(START_CODE, n);
        this.stats.frames++;
        this.emit({ timestamp: this.ts, data: Buffer.concat(parts), key: this.key });
      }
    } else if (this.broken) this.stats.dropped++;
    this.nals = [];
    this.bytes = 0;
    this.broken = false;
    this.key = false;
    this.started = false;
  }
}

export class H264Depacketizer extends VideoDepacketizer {
  protected unpack(p: Buffer): void {
    const type = p[0]! & 0x1f;
    if (type >= 1 && type <= 23) {
      this.nal(p);
      return;
    }
    if (type === 24) {
      // STAP-A: 16-bit size + NAL unit, repeated.
      let off = 1;
      while (off + 2 <= p.length) {
        const size = p.readUInt16BE(off);
        off += 2;
        if (size === 0 || off + size > p.length) {
          this.malformed();
          return;
        }
        this.nal(p.subarray(off, off + size));
        off += size;
      }
      return;
    }
    if (type === 28) {
      if (p.length < 3) {
        this.malformed();
        return;
      }
      const fuh = p[1]!;
      const data = p.subarray(2);
      if (fuh & 0x80) this.fuStart(Buffer.from([(p[0]! & 0xe0) | (fuh & 0x1f)]), data);
      else this.fuMore(data, (fuh & 0x40) !== 0);
      return;
    }
    this.stats.unsupported++;
  }

  protected isKey(nal: Buffer): boolean {
    return (nal[0]! & 0x1f) === 5;
  }
}

export class HevcDepacketizer extends VideoDepacketizer {
  protected unpack(p: Buffer): void {
    if (p.length < 3) {
      this.malformed();
      return;
    }
    const type = (p[0]! >> 1) & 0x3f;
    if (type < 48) {
      this.nal(p);
      return;
    }
    if (type === 48) {
      // Aggregation packet: 16-bit size + NAL unit, repeated (no DONL/DOND).
      let off = 2;
      while (off + 2 <= p.length) {
        const size = p.readUInt16BE(off);
        off += 2;
        if (size < 2 || off + size > p.length) {
          this.malformed();
          return;
        }
        this.nal(p.subarray(off, off + size));
        off += size;
      }
      return;
    }
    if (type === 49) {
      const fuh = p[2]!;
      const data = p.subarray(3);
      if (fuh & 0x80) {
        this.fuStart(Buffer.from([(p[0]! & 0x81) | ((fuh & 0x3f) << 1), p[1]!]), data);
      } else this.fuMore(data, (fuh & 0x40) !== 0);
      return;
    }
    this.stats.unsupported++;
  }

  protected isKey(nal: Buffer): boolean {
    const t = (nal[0]! >> 1) & 0x3f;
    return t >= 16 && t <= 21;
  }
}

export interface AacParams {
  /** Bits of AU-size in each AU header (AAC-hbr: 13). */
  sizeLength: number;
  /** Bits of AU-Index (first header) / AU-Index-delta (the rest); AAC-hbr: 3. */
  indexLength: number;
  indexDeltaLength: number;
  /** Samples per AU: the RTP timestamp step between AUs of one packet (default 1024). */
  frameSamples: number;
}

/** The AU header layout of an mpeg4-generic fmtp; undefined when it uses fields this
 *  depacketizer does not read (CTS/DTS deltas, random access or stream state indications). */
export function aacParamsOf(fmtp: Record<string, string>): AacParams | undefined {
  const n = (k: string, d: number) => {
    const v = fmtp[k];
    return v !== undefined && /^\d+$/.test(v) ? Number(v) : d;
  };
  const sizeLength = n('sizelength', 0);
  if (sizeLength < 1 || sizeLength > 32) return undefined;
  for (const k of [
    'ctsdeltalength',
    'dtsdeltalength',
    'randomaccessindication',
    'streamstateindication',
    'auxiliarydatasizelength',
  ]) {
    if (n(k, 0) !== 0) return undefined;
  }
  return {
    sizeLength,
    indexLength: n('indexlength', 0),
    indexDeltaLength: n('indexdeltalength', 0),
    frameSamples: n('constantduration', 1024) || 1024,
  };
}

export class AacDepacketizer extends Base {
  private frag: { ts: number; size: number; parts: Buffer[]; have: number } | null = null;

  constructor(
    private readonly params: AacParams,
    emit: (f: RtpFrame) => void,
  ) {
    super(emit);
  }

  protected packet(p: RtpPacket, gap: boolean): void {
    const b = p.payload;
    if (b.length < 2) {
      this.stats.dropped++;
      return;
    }
    const bits = b.readUInt16BE(0);
    const headerBytes = (bits + 7) >> 3;
    let data = 2 + headerBytes;
    if (data > b.length) {
      this.stats.dropped++;
      return;
    }
    const { sizeLength, indexLength, indexDeltaLength } = this.params;
    const sizes: number[] = [];
    let bit = 0;
    const read = (n: number): number => {
      let v = 0;
      for (let i = 0; i < n; i++, bit++) v = v * 2 + ((b[2 + (bit >> 3)]! >> (7 - (bit & 7))) & 1);
      return v;
    };
    while (sizes.length < MAX_AUS_PER_PACKET) {
      const idx = sizes.length === 0 ? indexLength : indexDeltaLength;
      if (bit + sizeLength + idx > bits) break;
      sizes.push(read(sizeLength));
      read(idx);
    }
    if (this.frag) {
      // A continuation carries the whole AU's size and the rest of its bytes.
      const f = this.frag;
      if (gap || p.timestamp !== f.ts || sizes.length !== 1 || sizes[0] !== f.size) {
        this.stats.dropped++;
        this.frag = null;
      } else {
        f.parts.push(b.subarray(data));
        f.have += b.length - data;
        if (f.have >= f.size) {
          this.frag = null;
          this.frame(f.ts, Buffer.concat(f.parts).subarray(0, f.size));
        }
        return;
      }
    }
    let ts = p.timestamp;
    for (const size of sizes) {
      if (data + size <= b.length) {
        this.frame(ts, b.subarray(data, data + size));
        data += size;
      } else if (sizes.length === 1 && size <= MAX_FRAME_BYTES) {
        // The first fragment of an AU spread over packets.
        this.frag = { ts, size, parts: [b.subarray(data)], have: b.length - data };
        return;
      } else {
        this.stats.dropped++;
        return;
      }
      ts = (ts + this.params.frameSamples) >>> 0;
    }
  }

  private frame(ts: number, data: Buffer): void {
    this.stats.frames++;
    this.emit({ timestamp: ts, data, key: true });
  }
}

/** MPEG-TS over RTP (RFC 2250): the payload is whole TS packets, passed on as they are. */
export class Mp2tDepacketizer extends Base {
  protected packet(p: RtpPacket): void {
    if (p.payload.length === 0 || p.payload.length % 188 !== 0 || p.payload[0] !== 0x47) {
      this.stats.dropped++;
      return;
    }
    this.stats.frames++;
    this.emit({ timestamp: p.timestamp, data: p.payload, key: true });
  }
}
