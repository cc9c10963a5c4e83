// Test helpers of the EPG part: a Host with a ManualClock, a temp data dir and a runtime.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { EpgSourceApplied } from '../../src/config/spec-types.generated.ts';
import { acquireEpgRuntime, type EpgRuntime, releaseEpgRuntime } from '../../src/epg/runtime.ts';
import { silentLogger } from '../../src/log.ts';
import type { Host } from '../../src/reconciler/driver.ts';
import { ManualClock } from '../../src/util/clock.ts';
import { Services } from '../../src/util/services.ts';
import { applied } from './desired.ts';

/** 2026-03-10 00:00:00 UTC, the day the XMLTV fixture is about. */
export const FIXTURE_DAY = Date.UTC(2026, 2, 10) / 1000;

export interface EpgTestBed {
  host: Host;
  clock: ManualClock;
  rt: EpgRuntime;
  dir: string;
  close(): void;
}

export function epgTestBed(
  t: { teardown(fn: () => void): void },
  startSec = FIXTURE_DAY + 6 * 3600,
): EpgTestBed {
  const dir = mkdtempSync(join(tmpdir(), 'sluice-epg-'));
  const clock = new ManualClock(startSec * 1000);
  const host: Host = {
    log: silentLogger,
    clock,
    dataDir: dir,
    lookup: () => undefined,
    services: new Services(),
  };
  const rt = acquireEpgRuntime(host);
  let closed = false;
  const close = () => {
    if (closed) return;
    closed = true;
    releaseEpgRuntime(host, rt);
    rmSync(dir, { recursive: true, force: true });
  };
  t.teardown(close);
  return { host, clock, rt, dir, close };
}

/** Fixture path under test/epg/fixtures. */
export function fixture(name: string): string {
  return new URL(`../epg/fixtures/${name}`, import.meta.url).pathname;
}

/** An EPG source record as its driver gets it: the schema's defaults applied to `spec`. */
export function sourceRecord(
  spec: { id: number; name: string; source: string } & Record<string, unknown>,
): EpgSourceApplied {
  return applied('epg-source', String(spec.id), spec).spec;
}
