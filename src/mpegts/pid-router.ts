// Routing a multiplex's packets to the programmes that take them: the demuxer's hot loop (a PID
// lookup and a 188-byte copy per packet). `routePackets` here is the reference in TypeScript;
// the native core has the same function (src/native/pid-router.ts), which the demuxer injects
// into its ProgrammeSplitter. Both stop where a packet needs the splitter's own handling, so the
// order of a programme's packets never changes. A table packet that repeats the last one of its
// PID (PAT and PMTs, ten times a second) cannot change the routes, so it is noted like SDT and
// EIT packets instead of stopping the call.
import { PID_COUNT, pid, TS_PACKET_SIZE } from './packet.ts';

/** Codes 1..ROUTE_MAX_SLOT: copy into that slot (code − 1). */
export const ROUTE_MAX_SLOT = 200;
/** Codes ROUTE_TABLE_FIRST + k (k < ROUTE_TABLE_SLOTS): a table PID read in order, its last
 *  packet kept in last[k × 188, +188). A packet equal to it (the continuity counter aside) is
 *  noted as ROUTE_DEFER notes; any other is kept there and stopped at as ROUTE_STOP stops. */
export const ROUTE_TABLE_FIRST = 201;
export const ROUTE_TABLE_SLOTS = 52;
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
  /** The last packet of each table PID with a ROUTE_TABLE_FIRST + k code (k × 188). */
  last: Buffer;
}

/**
 * Route the packets of `src` from byte `from` to `end` (whole packets). Returns `end` when
 * every packet was routed, or the offset of the first packet it stopped at: a ROUTE_STOP code,
 * a table packet unlike the last of its PID (or beyond `last`), a slot whose region is full, a
 * slot beyond `lens`, or `deferred` full.
 */
export type PacketRouter = (src: Buffer, from: number, end: number, t: RouteTables) => number;

export const routePackets: PacketRouter = (src, from, end, t) => {
  const { codes, dst, region, lens, deferred, state, last } = t;
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
    } else if (c === ROUTE_DEFER || isTableCode(c)) {
      if (c !== ROUTE_DEFER) {
        const k = (c - ROUTE_TABLE_FIRST) * TS_PACKET_SIZE;
        if (k + TS_PACKET_SIZE > last.length) return o;
        if (!sameButCc(src, o, last, k)) {
          src.copy(last, k, o, o + TS_PACKET_SIZE);
          return o;
        }
      }
      if (state[0]! >= deferred.length) return o;
      deferred[state[0]!] = o;
      state[0] = state[0]! + 1;
    } else return o;
  }
  return end;
};

export function isTableCode(c: number): boolean {
  return c >= ROUTE_TABLE_FIRST && c < ROUTE_TABLE_FIRST + ROUTE_TABLE_SLOTS;
}

/** The packet at `o` of `a` and at `k` of `b` are equal but for the continuity counter. */
function sameButCc(a: Buffer, o: number, b: Buffer, k: number): boolean {
  if (((a[o + 3]! ^ b[k + 3]!) & 0xf0) !== 0) return false;
  return (
    a.compare(b, k, k + 3, o, o + 3) === 0 &&
    a.compare(b, k + 4, k + TS_PACKET_SIZE, o + 4, o + TS_PACKET_SIZE) === 0
  );
}

export function routeCodes(): Uint8Array {
  return new Uint8Array(PID_COUNT);
}
