// What tests of one input on its own need: an InputContext on the system clock that collects
// what the input hands over, and the garbage collector forced (./gc.ts).
import type { InputContext } from '../../src/engine/input.ts';
import { silentLogger } from '../../src/log.ts';
import { systemClock } from '../../src/util/clock.ts';

export interface Collected {
  bytes: number;
  discontinuities: string[];
}

/** A context whose onData counts bytes and onDiscontinuity keeps the reasons. */
export function inputContext(got: Collected = { bytes: 0, discontinuities: [] }): InputContext {
  return {
    log: silentLogger,
    clock: systemClock,
    dataDir: '/nonexistent',
    streamName: 'x',
    index: 0,
    onData: (b) => {
      got.bytes += b.length;
    },
    onDiscontinuity: (r) => got.discontinuities.push(r),
    bus: () => undefined,
  };
}

/** The collector, callable; a full collection every `everyMs` until the test ends. */
export { collectGarbageRepeatedly as collectAlways, exposedGc as collector } from './gc.ts';
