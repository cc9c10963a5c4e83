// One programme splitter per multiplex bus, shared by every demuxer input reading that bus:
// subscribed once, ref-counted, unsubscribed and forgotten when its last consumer leaves.
import type { StreamBus } from '../../engine/bus.ts';
import {
  type ConsumerEvents,
  type ConsumerOptions,
  type ProgrammeConsumer,
  ProgrammeSplitter,
  type SplitterStats,
} from '../../mpegts/programme-splitter.ts';

interface Shared {
  splitter: ProgrammeSplitter;
  off: () => void;
}

const byBus = new WeakMap<StreamBus, Shared>();

export interface SplitterLease {
  consumer: ProgrammeConsumer;
  splitterStats(): SplitterStats;
  /** Leave the splitter; the last one out unsubscribes it from the bus. Idempotent. */
  release(): void;
}

export function leaseProgramme(
  bus: StreamBus,
  pnr: number,
  events: ConsumerEvents,
  opts: ConsumerOptions,
): SplitterLease {
  let shared = byBus.get(bus);
  if (!shared) {
    const splitter = new ProgrammeSplitter();
    const off = bus.subscribe({
      packets: (b) => splitter.push(b),
      discontinuity: (reason) => splitter.discontinuity(reason),
      end: () => splitter.end(),
    });
    shared = { splitter, off };
    byBus.set(bus, shared);
  }
  const s = shared;
  const consumer = s.splitter.add(pnr, events, opts);
  let released = false;
  return {
    consumer,
    splitterStats: () => s.splitter.stats(),
    release: () => {
      if (released) return;
      released = true;
      s.splitter.remove(consumer);
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
