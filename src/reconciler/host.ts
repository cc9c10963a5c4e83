// The Host drivers receive, built once by the server (or a test). The reconcile loop wraps it
// per resource with a child logger and a lookup of the instances it runs.
import type { Logger } from 'pino';
import { type Clock, systemClock } from '../util/clock.ts';
import { Services } from '../util/services.ts';
import type { Host } from './driver.ts';

export function createHost(opts: {
  log: Logger;
  dataDir: string;
  clock?: Clock;
  services?: Services;
}): Host {
  return {
    log: opts.log,
    clock: opts.clock ?? systemClock,
    dataDir: opts.dataDir,
    services: opts.services ?? new Services(),
    // Outside the loop nothing runs; the loop answers lookups from its own instances.
    lookup: () => undefined,
  };
}
