// Test helpers for the DVR: a storage on a temp directory with a ManualClock and disk
// figures the test sets, and chunks written straight into it (file + index row).

import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { storageById } from '../../src/drivers/storage.ts';
import type { ArchiveHookOptions } from '../../src/dvr/attach.ts';
import { type DiskFigures, statfsProbe } from '../../src/dvr/disk.ts';
import { type ChunkRow, TS_TRACK } from '../../src/dvr/index-db.ts';
import { chunkPath } from '../../src/dvr/recorder.ts';
import { readStorage } from '../../src/dvr/settings.ts';
import { ArchiveStorage } from '../../src/dvr/storage.ts';
import { silentLogger } from '../../src/log.ts';
import type { Host, Instance } from '../../src/reconciler/driver.ts';
import { ManualClock } from '../../src/util/clock.ts';
import { Services } from '../../src/util/services.ts';
import { applied } from '../helpers/desired.ts';
import type { TinyBus } from '../helpers/ott.ts';

export interface TapLike {
  teardown(fn: () => unknown): void;
}

export const GIB = 1024 ** 3;

export function tempDir(t: TapLike, prefix = 'sluice-dvr-'): string {
  const dir = mkdtempSync(join(tmpdir(), prefix));
  t.teardown(() => rmSync(dir, { recursive: true, force: true }));
  return dir;
}

export interface TestStorage {
  storage: ArchiveStorage;
  clock: ManualClock;
  disk: DiskFigures;
  dir: string;
}

/** A storage whose disk figures are `disk` (mutable by the test). Timers never fire by themselves. */
export async function testStorage(
  t: TapLike,
  spec: Record<string, unknown> = {},
  disk: DiskFigures = { total: 100 * GIB, free: 60 * GIB, used: 40 * GIB },
): Promise<TestStorage> {
  const dir = tempDir(t);
  const clock = new ManualClock(Date.now());
  const figures = disk;
  const storage = new ArchiveStorage(
    readStorage(
      applied('storage', '1', { id: 1, name: 's1', 'dir-path': join(dir, 'store'), ...spec }).spec,
    ),
    { clock, log: silentLogger, probe: async () => ({ ...figures }) },
  );
  t.teardown(() => storage.close());
  await storage.start();
  return { storage, clock, disk: figures, dir: join(dir, 'store') };
}

/** Write one chunk file of `bytes` bytes and index it. */
export function addChunk(
  s: ArchiveStorage,
  stream: string,
  startMs: number,
  o: { duration?: number; bytes?: number; track?: string; disc?: boolean } = {},
): ChunkRow {
  const track = o.track ?? TS_TRACK;
  const bytes = o.bytes ?? 1000;
  const uri = `seg-${startMs.toString(16)}${track === TS_TRACK ? '' : track}.ts`;
  const rel = chunkPath(stream, track, startMs, uri);
  const full = join(s.dir, rel);
  mkdirSync(dirname(full), { recursive: true });
  writeFileSync(full, Buffer.alloc(Math.min(bytes, 4096)));
  const index = s.index!;
  let init = index.init(stream, track, 'layout');
  if (!init) index.addInit(stream, track, 'layout', '', '[]');
  init = index.init(stream, track, 'layout')!;
  const row = {
    stream,
    track,
    start_ms: startMs,
    duration: o.duration ?? 2,
    bytes,
    path: rel,
    uri,
    disc: o.disc ? 1 : 0,
    media_start: 0,
    timescale: 90000,
    init_id: init.id,
  };
  const [id] = index.insertMany([row]);
  s.indexChanged();
  return { id: id!, ...row };
}

/** Add `n` back-to-back chunks starting at `from`. */
export function addRun(
  s: ArchiveStorage,
  stream: string,
  from: number,
  n: number,
  o: { duration?: number; bytes?: number } = {},
): ChunkRow[] {
  const d = o.duration ?? 2;
  return Array.from({ length: n }, (_, i) => addChunk(s, stream, from + i * d * 1000, o));
}

export function attach(s: ArchiveStorage, name: string, hours = 24, minHours = 0): void {
  s.attach(name, { settings: { storage: 1, hours, minHours }, active: () => true });
}

/**
 * A real storage (statfs figures of the temp disk) under `dir/store` with a ManualClock, and a
 * Host whose `lookup('storage', '1')` finds it: what a recording stream instance sees.
 */
export async function recordingHost(
  t: TapLike,
  dir: string,
): Promise<{ clock: ManualClock; storage: ArchiveStorage; host: Host }> {
  const clock = new ManualClock(Date.UTC(2026, 2, 1, 10, 0, 0));
  const storage = new ArchiveStorage(
    readStorage(
      applied('storage', '1', { id: 1, name: 'disk', 'dir-path': join(dir, 'store') }).spec,
    ),
    { clock, log: silentLogger, probe: statfsProbe },
  );
  t.teardown(() => storage.close());
  await storage.start();
  const host: Host = {
    log: silentLogger,
    clock,
    dataDir: dir,
    lookup: <T extends Instance>(kind: string, key: string) =>
      (kind === 'storage' && key === '1' ? ({ storage } as unknown as Instance) : undefined) as
        | T
        | undefined,
    services: new Services(),
  };
  return { clock, storage, host };
}

/** What the stream driver hands the archive hook, taken from a test Host. */
export function hookHost(
  host: Host,
): Pick<ArchiveHookOptions, 'storage' | 'services' | 'clock' | 'log'> {
  return {
    storage: (id) => storageById(host, id),
    services: host.services,
    clock: host.clock,
    log: host.log,
  };
}

/** Pieces a second of the clock that feedPaced pushes data in (the recorder's pace). */
const PIECES_PER_SECOND = 4;

/** Push `data` (TS) into `bus` as `seconds` of a stream: a quarter second of the clock a piece. */
export async function feedPaced(
  bus: TinyBus,
  clock: ManualClock,
  data: Buffer,
  seconds: number,
): Promise<void> {
  const size = Math.ceil(data.length / (seconds * PIECES_PER_SECOND) / 188) * 188;
  for (let o = 0; o < data.length; o += size) {
    bus.push(data.subarray(o, o + size));
    clock.advance(1000 / PIECES_PER_SECOND);
    await new Promise((r) => setImmediate(r));
  }
}
