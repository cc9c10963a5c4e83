// Teletext decoder for subtitles: EN 300 472 PES data units → EN 300 706 packets → pages.
// Keeps the rows of the selected pages per magazine and reports a page each time a PES
// completes a change to it, stamped with the PTS of the PES that carried its header.
import { parity7, reverseBits, unham84, unham2418 } from './hamming.ts';

/** EN 300 472: data_identifier range of EBU teletext in a PES. */
const DATA_ID_MIN = 0x10;
const DATA_ID_MAX = 0x1f;
const UNIT_NON_SUBTITLE = 0x02;
const UNIT_SUBTITLE = 0x03;
const UNIT_LENGTH = 0x2c;
/** Framing code 0x27 as it appears in the PES (bit-reversed). */
const FRAMING_CODE = 0xe4;
const PACKET_BYTES = 42;
const ROW_COLUMNS = 40;
const LAST_DISPLAY_ROW = 24;
const PACKET_ENHANCEMENT = 26;
const TRIPLETS_PER_PACKET = 13;
/** A page byte of 0xFF is a time-filling header: it ends the previous page, starts none. */
const FILLER_PAGE = 0xff;
const X26_ROW_ADDRESS_MIN = 40;
const X26_SET_ACTIVE_POSITION = 0x04;
const X26_TERMINATION = 0x1f;
const X26_G2_CHARACTER = 0x0f;
const X26_G0_DIACRITIC_MIN = 0x10;

/** One character cell's override from an X/26 triplet. */
export interface Enhancement {
  kind: 'g2' | 'diacritic';
  code: number;
  mark: number;
}

export interface TeletextPage {
  /** Magazine (1..8) × 0x100 + page byte, e.g. 0x888. */
  page: number;
  /** PTS (unwrapped 90 kHz) of the PES that carried the header. */
  pts: number;
  /** C6: subtitle page; only boxed text is shown. */
  subtitle: boolean;
  /** National option subset (C12 C13 C14). */
  national: number;
  /** Display rows 1..24: 40 seven-bit codes each, -1 where parity failed. */
  rows: Map<number, Int16Array>;
  /** X/26 overrides keyed by row × 40 + column. */
  enhancements: Map<number, Enhancement>;
}

interface Receiving extends TeletextPage {
  dirty: boolean;
}

/** Page number in the teletext descriptor's terms (magazine 0 means 8) → 0x888 form. */
export function pageAddress(magazine: number, pageByte: number): number {
  return ((magazine & 7 || 8) << 8) | (pageByte & 0xff);
}

export function pageLabel(address: number): string {
  return address.toString(16);
}

export class TeletextDecoder {
  /** The page being received in each magazine (parallel transmission). */
  private current = new Map<number, Receiving>();
  /** Last rows of each page, kept for updates sent without the erase bit. */
  private memory = new Map<number, Receiving>();
  private pts = 0;

  constructor(
    private wanted: Set<number>,
    private onPage: (page: TeletextPage) => void,
  ) {}

  /** One PES payload (after the PES header) with its unwrapped PTS. */
  push(data: Buffer, pts: number): void {
    if (data.length < 1 || data[0]! < DATA_ID_MIN || data[0]! > DATA_ID_MAX) return;
    this.pts = pts;
    for (let o = 1; o + 2 <= data.length; ) {
      const id = data[o]!;
      const len = data[o + 1]!;
      const body = o + 2;
      if (body + len > data.length) break;
      if ((id === UNIT_NON_SUBTITLE || id === UNIT_SUBTITLE) && len === UNIT_LENGTH)
        this.unit(data, body);
      o = body + len;
    }
    for (const page of this.current.values()) this.emit(page);
  }

  /** Close every page in reception (end of input, splice). */
  flush(): void {
    for (const m of [...this.current.keys()]) this.finish(m);
  }

  private unit(b: Buffer, o: number): void {
    if (b[o + 1] !== FRAMING_CODE) return;
    const p = Buffer.allocUnsafe(PACKET_BYTES);
    for (let i = 0; i < PACKET_BYTES; i++) p[i] = reverseBits(b[o + 2 + i]!);
    const a = unham84(p[0]!);
    const b2 = unham84(p[1]!);
    if (a < 0 || b2 < 0) return;
    const magazine = a & 7 || 8;
    const packet = (a >> 3) | (b2 << 1);
    if (packet === 0) this.header(magazine, p);
    else if (packet <= LAST_DISPLAY_ROW) this.row(magazine, packet, p);
    else if (packet === PACKET_ENHANCEMENT) this.enhancement(magazine, p);
  }

  private header(magazine: number, p: Buffer): void {
    const n = [2, 3, 4, 5, 6, 7, 8, 9].map((i) => unham84(p[i]!));
    if (n.some((v) => v < 0)) {
      this.finish(magazine);
      return;
    }
    const [units, tens, , s2, , s4, , c11to14] = n as number[];
    const serial = (c11to14! & 1) !== 0;
    if (serial) this.flush();
    else this.finish(magazine);
    const pageByte = (tens! << 4) | units!;
    const page = pageAddress(magazine, pageByte);
    if (pageByte === FILLER_PAGE || !this.wanted.has(page)) return;
    const erase = (s2! & 0x8) !== 0; // C4
    const prev = erase ? undefined : this.memory.get(page);
    // C12 C13 C14 sit in bits 1..3 of the nibble, C12 first; table 33 reads them C12-major.
    const national = ((c11to14! >> 1) & 1) * 4 + ((c11to14! >> 2) & 1) * 2 + ((c11to14! >> 3) & 1);
    this.current.set(magazine, {
      page,
      pts: this.pts,
      subtitle: (s4! & 0x8) !== 0, // C6
      national,
      rows: new Map(prev?.rows ?? []),
      enhancements: new Map(prev?.enhancements ?? []),
      dirty: true,
    });
  }

  private row(magazine: number, n: number, p: Buffer): void {
    const page = this.current.get(magazine);
    if (!page) return;
    const cells = new Int16Array(ROW_COLUMNS);
    for (let i = 0; i < ROW_COLUMNS; i++) cells[i] = parity7(p[2 + i]!);
    page.rows.set(n, cells);
    page.dirty = true;
  }

  private enhancement(magazine: number, p: Buffer): void {
    const page = this.current.get(magazine);
    if (!page) return;
    let row = 0;
    for (let t = 0; t < TRIPLETS_PER_PACKET; t++) {
      const o = 3 + t * 3;
      const d = unham2418(p[o]!, p[o + 1]!, p[o + 2]!);
      if (d < 0) continue;
      const address = d & 0x3f;
      const mode = (d >> 6) & 0x1f;
      const data = (d >> 11) & 0x7f;
      if (address >= X26_ROW_ADDRESS_MIN) {
        if (mode === X26_TERMINATION && address === 0x3f) break;
        if (mode === X26_SET_ACTIVE_POSITION)
          row = address === X26_ROW_ADDRESS_MIN ? LAST_DISPLAY_ROW : address - X26_ROW_ADDRESS_MIN;
        continue;
      }
      const key = row * ROW_COLUMNS + address;
      if (mode === X26_G2_CHARACTER)
        page.enhancements.set(key, { kind: 'g2', code: data, mark: 0 });
      else if (mode >= X26_G0_DIACRITIC_MIN && data >= 0x20)
        page.enhancements.set(key, {
          kind: 'diacritic',
          code: data,
          mark: mode - X26_G0_DIACRITIC_MIN,
        });
      page.dirty = true;
    }
  }

  private finish(magazine: number): void {
    const page = this.current.get(magazine);
    if (!page) return;
    this.emit(page);
    this.memory.set(page.page, page);
    this.current.delete(magazine);
  }

  private emit(page: Receiving): void {
    if (!page.dirty) return;
    page.dirty = false;
    this.onPage({
      page: page.page,
      pts: page.pts,
      subtitle: page.subtitle,
      national: page.national,
      rows: new Map(page.rows),
      enhancements: new Map(page.enhancements),
    });
  }
}
