// One programme splitter per multiplex bus, shared by every demuxer input reading that bus:
// subscribed once, ref-counted, unsubscribed and forgotten when its last consumer leaves.
// Programmes inside a T2-MI carrier likewise: one T2-MI reader per multiplex bus (the carrier
// found from the tables, decapsulated once), one programme splitter per PLP over its inner TS.
import type { StreamBus } from '../../engine/bus.ts';
import {
  type ConsumerEvents,
  type ConsumerOptions,
  type ProgrammeConsumer,
  ProgrammeSplitter,
  type SplitterStats,
} from '../../mpegts/programme-splitter.ts';
import { type PlpStats, T2miReader, type T2miReaderStats } from '../../mpegts/t2mi.ts';
import { nativeRoutePackets } from '../../native/pid-router.ts';

interface Shared {
  splitter: ProgrammeSplitter;
  off: () => void;
  /** Leases per programme number: what the bus's per-PID filter must carry. */
  pnrs: Map<number, number>;
}

const byBus = new WeakMap<StreamBus, Shared>();

export interface SplitterLease {
  consumer: ProgrammeConsumer;
  splitterStats(): SplitterStats;
  /** Leave the splitter; the last one out unsubscribes it from the bus. Idempotent. */
  release(): void;
  /** For a programme inside a T2-MI PLP: the carrier's reader and the PLP. */
  t2mi?(): T2miLeaseStats;
}

export interface T2miLeaseStats extends T2miReaderStats {
  plp: number;
  /** This PLP's BBFrames and inner packets (undefined before the PLP is read). */
  plpStats: PlpStats | undefined;
}

export function leaseProgramme(
  bus: StreamBus,
  pnr: number,
  events: ConsumerEvents,
  opts: ConsumerOptions,
): SplitterLease {
  let shared = byBus.get(bus);
  if (!shared) {
    const splitter = new ProgrammeSplitter(nativeRoutePackets);
    const pnrs = new Map<number, number>();
    const off = bus.subscribe({
      packets: (b) => splitter.push(b),
      discontinuity: (reason) => splitter.discontinuity(reason),
      end: () => splitter.end(),
      programmes: () => [...pnrs.keys()],
    });
    shared = { splitter, off, pnrs };
    byBus.set(bus, shared);
  }
  const s = shared;
  const consumer = s.splitter.add(pnr, events, opts);
  s.pnrs.set(pnr, (s.pnrs.get(pnr) ?? 0) + 1);
  let released = false;
  return {
    consumer,
    splitterStats: () => s.splitter.stats(),
    release: () => {
      if (released) return;
      released = true;
      s.splitter.remove(consumer);
      const left = (s.pnrs.get(pnr) ?? 1) - 1;
      if (left > 0) s.pnrs.set(pnr, left);
      else s.pnrs.delete(pnr);
      if (s.splitter.size === 0) {
        s.off();
        if (byBus.get(bus) === s) byBus.delete(bus);
      }
    },
  };
}

/** Consumers of the splitter on `bus` (0 when there is none): for tests and status. */
export function splitterConsumers(bus: StreamBus): number {
  return byBus.get(bus)?.splitter.size ?? 0;
}

interface SharedT2mi {
  reader: T2miReader;
  /** A programme splitter over each PLP's inner TS. */
  plps: Map<number, ProgrammeSplitter>;
  off: () => void;
}

const t2miByBus = new WeakMap<StreamBus, SharedT2mi>();

/** Programme `programme` of the inner TS of PLP `plp` of the T2-MI carrier on `bus` (found
 *  from the multiplex's tables). */
export function leaseT2miProgramme(
  bus: StreamBus,
  plp: number,
  programme: number,
  events: ConsumerEvents,
  opts: ConsumerOptions,
): SplitterLease {
  let shared = t2miByBus.get(bus);
  if (!shared) {
    const reader = new T2miReader();
    const plps = new Map<number, ProgrammeSplitter>();
    const off = bus.subscribe({
      packets: (b) => reader.push(b),
      discontinuity: (reason) => {
        reader.discontinuity();
        for (const sp of plps.values()) sp.discontinuity(reason);
      },
      end: () => {
        for (const sp of plps.values()) sp.end();
      },
    });
    shared = { reader, plps, off };
    t2miByBus.set(bus, shared);
  }
  const s = shared;
  let splitter = s.plps.get(plp);
  if (!splitter) {
    const sp = new ProgrammeSplitter(nativeRoutePackets);
    splitter = sp;
    s.plps.set(plp, sp);
    s.reader.addPlp(plp, (ts) => sp.push(ts));
  }
  const sp = splitter;
  const consumer = sp.add(programme, events, opts);
  let released = false;
  return {
    consumer,
    splitterStats: () => sp.stats(),
    t2mi: () => ({ ...s.reader.stats(), plp, plpStats: s.reader.plpStats(plp) }),
    release: () => {
      if (released) return;
      released = true;
      sp.remove(consumer);
      if (sp.size > 0) return;
      s.plps.delete(plp);
      s.reader.removePlp(plp);
      if (s.plps.size > 0) return;
      s.off();
      if (t2miByBus.get(bus) === s) t2miByBus.delete(bus);
    },
  };
}

/** PLPs read by the T2-MI reader on `bus` (0 when there is none): for tests and status. */
export function t2miPlps(bus: StreamBus): number {
  return t2miByBus.get(bus)?.plps.size ?? 0;
}
