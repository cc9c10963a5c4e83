// Routing a multiplex's packets to the programmes that take them: the demuxer's hot loop (a PID
// lookup and a 188-byte copy per packet). `routePackets` here is the reference in TypeScript;
// the native core has the same function (src/native/pid-router.ts), which the demuxer injects
// into its ProgrammeSplitter. Both stop where a packet needs the splitter's own handling, so the
// order of a programme's packets never changes.
import { PID_COUNT, pid, TS_PACKET_SIZE } from './packet.ts';

/** Codes 1..ROUTE_MAX_SLOT: copy into that slot (code − 1). */
export const ROUTE_MAX_SLOT = 250;
/** Note the packet's offset; the splitter handles it after the batch (order does not matter). */
export const ROUTE_DEFER = 254;
/** Return here: the splitter handles this packet before any later one. */
export const ROUTE_STOP = 255;

/** What one routing call reads and writes. */
export interface RouteTables {
  /** A code per PID (PID_COUNT entries): 0 drop, a slot, ROUTE_DEFER or ROUTE_STOP. */
  codes: Uint8Array;
  /** Slot k writes into dst[k × region, (k + 1) × region), filled up to lens[k] bytes. */
  dst: Buffer;
  region: number;
  lens: Int32Array;
  /** Offsets of deferred packets, state[0] of them. */
  deferred: Int32Array;
  state: Int32Array;
}

/**
 * Route the packets of `src` from byte `from` to `end` (whole packets). Returns `end` when
 * every packet was routed, or the offset of the first packet it stopped at: a ROUTE_STOP code,
 * a slot whose region is full, a slot beyond `lens`, or `deferred` full.
 */
export type PacketRouter = (src: Buffer, from: number, end: number, t: RouteTables) => number;

export const routePackets: PacketRouter = (src, from, end, t) => {
  const { codes, dst, region, lens, deferred, state } = t;
  for (let o = from; o < end; o += TS_PACKET_SIZE) {
    const c = codes[pid(src, o)]!;
    if (c === 0) continue;
    if (c <= ROUTE_MAX_SLOT) {
      const slot = c - 1;
      if (slot >= lens.length) return o;
      const at = lens[slot]!;
      if (at + TS_PACKET_SIZE > region) return o;
      src.copy(dst, slot * region + at, o, o + TS_PACKET_SIZE);
      lens[slot] = at + TS_PACKET_SIZE;
    } else if (c === ROUTE_DEFER) {
      if (state[0]! >= deferred.length) return o;
      deferred[state[0]!] = o;
      state[0] = state[0]! + 1;
    } else return o;
  }
  return end;
};

export function routeCodes(): Uint8Array {
  return new Uint8Array(PID_COUNT);
}
