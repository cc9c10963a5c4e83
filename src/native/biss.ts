// BissDescrambler: the typed façade over the native BISS descrambler (native/ts/biss.{h,cc},
// libdvbcsa's bitslice DVB-CSA). Keys are checked and turned into control words here; the C++
// side trusts what it gets. docs/multiplex.md, "BISS", says what an operator sees.
import { MAX_PID, TS_PACKET_SIZE } from '../mpegts/packet.ts';
import { addon, type NativeBissDescrambler } from './addon.ts';
import { argError, fromNative } from './errors.ts';

/** A BISS key as the configuration gives it: 12 hex digits (BISS-1) or 16 (BISS-E). */
export const BISS_KEY_PATTERN = /^(?:[0-9A-Fa-f]{12}|[0-9A-Fa-f]{16})$/;

export type BissKeyKind = 'BISS-1' | 'BISS-E';

export function bissKeyKind(key: string): BissKeyKind {
  return key.length === 12 ? 'BISS-1' : 'BISS-E';
}

/**
 * The 8-byte DVB-CSA control word of a BISS key.
 * - 12 hex digits (BISS-1, the clear session word): bytes k0 k1 k2 k3 k4 k5 become
 *   k0 k1 k2 (k0+k1+k2) k3 k4 k5 (k3+k4+k5), sums mod 256 — the checksum bytes every CSA
 *   control word carries.
 * - 16 hex digits: the control word itself, byte for byte, checksum bytes as written (the
 *   form receivers and softcams take for BISS-E once decrypted, and for a plain 8-byte CW).
 */
export function bissControlWord(key: string): Buffer {
  if (typeof key !== 'string' || !BISS_KEY_PATTERN.test(key)) {
    throw argError('a BISS key is 12 hex digits (BISS-1) or 16 hex digits (BISS-E)');
  }
  const b = Buffer.from(key, 'hex');
  if (b.length === 8) return b;
  const cw = Buffer.alloc(8);
  b.copy(cw, 0, 0, 3);
  b.copy(cw, 4, 3, 6);
  cw[3] = (cw[0]! + cw[1]! + cw[2]!) & 0xff;
  cw[7] = (cw[4]! + cw[5]! + cw[6]!) & 0xff;
  return cw;
}

/** The most negative target: the carrier of PLP 255. */
export const BISS_MIN_CARRIER_TARGET = -256;

/** The PLP a carrier target -(n+1) names (n), or undefined for a programme number. */
export function bissCarrierPlp(pnr: number): number | undefined {
  return pnr < 0 ? -pnr - 1 : undefined;
}

export interface BissTarget {
  /** Programme number (PAT program_number), 1..65535; or -(n+1): the T2-MI carrier that
   *  brings PLP n (one carrier holds every PLP, so any n takes the same carrier PID). */
  pnr: number;
  /** 12 or 16 hex digits. */
  key: string;
}

/** What a target is doing: see docs/multiplex.md, "BISS". */
export type BissState =
  | 'waiting'
  | 'not in multiplex'
  | 'clear'
  | 'descrambling'
  | 'still scrambled';

export interface BissTargetStatus {
  /** As configured: a programme number, or -(n+1) for the T2-MI carrier (of PLP n). */
  pnr: number;
  key: BissKeyKind;
  state: BissState;
  /** PMT PID from the PAT; -1 while unknown. A carrier: the PMT PID that signals it. */
  pmtPid: number;
  /** The elementary PIDs descrambled (from its PMT). A carrier: its carrier PID. */
  pids: number[];
  /** A carrier target: the carrier PID (-1 while none is found); absent for a programme. */
  carrierPid?: number;
  descrambled: number;
  /** PES starts checked after descrambling: 00 00 01 (ok) or not (bad: a wrong key). A
   *  carrier: T2-MI headers where a unit start's pointer_field says one begins. */
  pesOk: number;
  pesBad: number;
  /** Packets descrambled into no PES start, with the rest of their PES packet. */
  stillScrambled: number;
  /** Payload packets that came clear on its PIDs. */
  clear: number;
}

export interface BissStats {
  packets: number;
  scrambled: number;
  descrambled: number;
  /** Scrambled packets of no target's PID (passed as they came). */
  notTargeted: number;
  /** transport_scrambling_control 01 (reserved): passed as they came. */
  reserved: number;
  crcErrors: number;
  /** PIDs whose packets leave still scrambled (no target, or a wrong key). */
  stillScrambledPids: number[];
  targets: BissTargetStatus[];
}

interface RawTarget {
  pnr: number;
  pmtPid: number;
  inPat: boolean;
  /** A carrier target: every PMT of a complete PAT read, none signals a carrier. */
  absent: boolean;
  pids: number[];
  descrambled: number;
  pesOk: number;
  pesBad: number;
  stillScrambled: number;
  clear: number;
  lastBad: boolean;
  checked: boolean;
}

function stateOf(t: RawTarget, patSeen: boolean): BissState {
  if (t.pnr < 0 && !t.inPat) return t.absent ? 'not in multiplex' : 'waiting';
  if (!t.inPat) return patSeen ? 'not in multiplex' : 'waiting';
  if (t.pids.length === 0) return 'waiting';
  if (t.lastBad) return 'still scrambled';
  if (t.checked || t.descrambled > 0) return 'descrambling';
  return 'clear';
}

/**
 * Descrambles BISS programmes of a transport stream in place. It reads the PAT and the
 * targets' PMTs from the packets it is given (every PMT with a T2-MI carrier target, to find
 * the carrier as src/mpegts/t2mi.ts does), so it needs nothing but the packets. Not thread
 * safe; one per stream.
 */
export class BissDescrambler {
  /** Packets libdvbcsa's bitslice code descrambles per call (per key). */
  static get batchSize(): number {
    return addon().BissDescrambler.batchSize;
  }

  private readonly native: NativeBissDescrambler;
  private readonly kinds: BissKeyKind[];

  constructor(targets: readonly BissTarget[]) {
    if (!Array.isArray(targets)) throw argError('targets must be an array');
    const raw = targets.map((t, i) => {
      if (
        !Number.isInteger(t.pnr) ||
        t.pnr < BISS_MIN_CARRIER_TARGET ||
        t.pnr === 0 ||
        t.pnr > 0xffff
      ) {
        throw argError(`target ${i}: pnr must be 1..65535, or -256..-1 for a T2-MI carrier`);
      }
      return { pnr: t.pnr, cw: bissControlWord(t.key) };
    });
    this.kinds = targets.map((t) => bissKeyKind(t.key));
    try {
      this.native = new (addon().BissDescrambler)(raw);
    } catch (err) {
      throw fromNative(err);
    }
  }

  /**
   * Descrambles in place the target packets of `packets` (whole aligned 188-byte packets; a
   * tail shorter than a packet is left alone) and clears their scrambling bits. Returns the
   * number of packets descrambled.
   */
  process(packets: Buffer): number {
    if (!Buffer.isBuffer(packets)) throw argError('packets must be a Buffer');
    if (packets.length < TS_PACKET_SIZE) return 0;
    return this.native.process(packets);
  }

  stats(): BissStats {
    const s = this.native.stats() as Omit<BissStats, 'targets'> & {
      patSeen: boolean;
      targets: RawTarget[];
    };
    return {
      packets: s.packets,
      scrambled: s.scrambled,
      descrambled: s.descrambled,
      notTargeted: s.notTargeted,
      reserved: s.reserved,
      crcErrors: s.crcErrors,
      stillScrambledPids: s.stillScrambledPids,
      targets: s.targets.map((t, i) => ({
        pnr: t.pnr,
        key: this.kinds[i]!,
        state: stateOf(t, s.patSeen),
        pmtPid: t.pmtPid,
        pids: t.pids,
        ...(t.pnr < 0 ? { carrierPid: t.pids[0] ?? -1 } : {}),
        descrambled: t.descrambled,
        pesOk: t.pesOk,
        pesBad: t.pesBad,
        stillScrambled: t.stillScrambled,
        clear: t.clear,
      })),
    };
  }
}

/**
 * Scrambles in place, with libdvbcsa's single-packet encrypt, the payload of every clear
 * packet of `pids`, and marks it with transport_scrambling_control `tsc` (2 even, 3 odd).
 * The encoder of the test and bench fixtures (BISS encoders are not this server's job).
 * Returns the packets scrambled.
 */
export function bissScramble(
  packets: Buffer,
  key: string,
  pids: readonly number[],
  tsc = 2,
): number {
  if (!Buffer.isBuffer(packets)) throw argError('packets must be a Buffer');
  if (tsc !== 2 && tsc !== 3) throw argError('tsc must be 2 (even) or 3 (odd)');
  for (const p of pids) {
    if (!Number.isInteger(p) || p < 0 || p > MAX_PID) throw argError(`bad PID ${p}`);
  }
  return addon().bissScramble(packets, bissControlWord(key), [...pids], tsc);
}
