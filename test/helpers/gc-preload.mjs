// Preloaded into a child (NODE_OPTIONS --import, test/helpers/gc.ts): a garbage collection every
// 50 ms for the process's life, on a timer that does not keep the process alive.
import { setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';

setFlagsFromString('--expose-gc');
const gc = runInNewContext('gc');
setInterval(gc, 50).unref();
