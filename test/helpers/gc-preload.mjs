// Preloaded into a child (NODE_OPTIONS --import, test/helpers/gc.ts): a garbage collection every
// 50 ms for the process's life (each after a pause at least as long as the previous one took, so
// a loaded machine's slow collections do not hold the loop all along), on timers that do not
// keep the process alive.
import { setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';

setFlagsFromString('--expose-gc');
const gc = runInNewContext('gc');
const next = (wait) => {
  setTimeout(() => {
    const began = performance.now();
    gc();
    next(Math.max(50, performance.now() - began));
  }, wait).unref();
};
next(50);
