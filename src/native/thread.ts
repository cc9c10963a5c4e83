// The calling thread's name as `top -H`, `ps -L`, perf and /proc show it: a stream worker's
// JavaScript thread is `sluice-js-N` (every V8 and libuv thread is `node`).
import { addon } from './addon.ts';
import { argError } from './errors.ts';

/** At most 15 characters (the kernel's limit). */
export function nameThisThread(name: string): void {
  if (name.length === 0 || name.length > 15) throw argError('a thread name has 1 to 15 characters');
  addon().nameThread(name);
}
