// Garbage collections forced over and over while a test waits: what a busy server does now and
// then, made certain, so that anything a collection could lose (a weakly held timer) is lost.
import { setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';
import type { Teardown } from './server.ts';

/** How often a collection runs: many times within any deadline a test waits for. */
export const GC_EVERY_MS = 50;

/** `gc()` of this process (V8 exposes it to a context made after the flag is set). */
export function exposedGc(): () => void {
  setFlagsFromString('--expose-gc');
  return runInNewContext('gc') as () => void;
}

/** Collect every `ms` until the test ends, each after a pause at least as long as the previous
 *  collection took: on a loaded machine one takes hundreds of ms, and back to back they would
 *  hold the event loop all along — starving the very timers and sockets a test waits on. */
export function collectGarbageRepeatedly(t: Teardown, ms = GC_EVERY_MS): void {
  const gc = exposedGc();
  let timer: NodeJS.Timeout;
  const next = (wait: number) => {
    timer = setTimeout(() => {
      const began = performance.now();
      gc();
      next(Math.max(ms, performance.now() - began));
    }, wait);
  };
  next(ms);
  t.teardown(() => clearTimeout(timer));
}

/** NODE_OPTIONS for a child (`startServer`'s env) that collects every GC_EVERY_MS all its life. */
export function gcPressureNodeOptions(): string {
  const preload = new URL('./gc-preload.mjs', import.meta.url).href;
  return [process.env['NODE_OPTIONS'], `--import=${preload}`].filter(Boolean).join(' ');
}

/** Bounds of `collectUntilSteady`: rounds, and the memory change that counts as none. */
const STEADY_ROUNDS_MAX = 20;
const STEADY_BYTES = 64 * 1024;

/** Collect until what array buffers hold stops falling (their memory is let go after the
 *  collection, not within it): the reading after a round that freed nothing. */
export async function collectUntilSteady(): Promise<number> {
  const gc = exposedGc();
  let last = Number.POSITIVE_INFINITY;
  for (let i = 0; i < STEADY_ROUNDS_MAX; i++) {
    gc();
    await new Promise(setImmediate);
    const now = process.memoryUsage().arrayBuffers;
    if (last - now < STEADY_BYTES) return now;
    last = now;
  }
  return last;
}
