// What tests of one input on its own need: an InputContext on the system clock that collects
// what the input hands over, and a loop forcing the garbage collector (timers a collection may
// take must survive it) without starting node with --expose-gc.
import { setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';
import type { InputContext } from '../../src/engine/input.ts';
import { silentLogger } from '../../src/log.ts';
import { systemClock } from '../../src/util/clock.ts';
import type { Teardown } from './server.ts';

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

/** The collector, callable (V8 exposes it to contexts made after the flag is set). */
export function collector(): () => void {
  setFlagsFromString('--expose-gc');
  return runInNewContext('gc') as () => void;
}

/** Force a full collection every `everyMs` until the test ends. */
export function collectAlways(t: Teardown, everyMs = 20): void {
  const gc = collector();
  const loop = setInterval(gc, everyMs);
  t.teardown(() => clearInterval(loop));
}
