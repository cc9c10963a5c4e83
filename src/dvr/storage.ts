// One archive storage: its state machine (not-ready → ready ⇄ error), the index, the streams
// bound to it, session protection slots, and the periodic cleanup pass (rolling, size-based
// with grace and hysteresis, emergency, orphan scan). Disk figures and time are injected.
import { statSync } from 'node:fs';
import { access, constants, mkdir, stat, unlink, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import type { Logger } from 'pino';
import { describeHolder, FileLock } from '../native/file-lock.ts';
import type { Clock, Timer } from '../util/clock.ts';
import { type BoundStream, chooseRolling, chooseTrim, type ProtectedRange } from './cleanup.ts';
import { type DiskFigures, type DiskProbe, usedPercent } from './disk.ts';
import {
  ArchiveIndex,
  type ChunkRow,
  INDEX_FILE,
  type MarkerKind,
  type NewChunk,
  type StreamTotals,
} from './index-db.ts';
import { LOCK_FILE, PROBE_FILE, scanOrphans } from './orphans.ts';
import { BLOCK_CACHE_CHARS, BLOCK_MS, PlaylistBlocks } from './playlist-blocks.ts';
import { reconcileTail } from './reconcile.ts';
import {
  ACTIVE_TASK_MIN_MS,
  ORPHAN_FIRST_DELAY_MS,
  ORPHAN_PERIOD_MS,
  RECOVERY_FACTOR,
  type StorageSettings,
  type StreamDvrSettings,
} from './settings.ts';
import { buildStatus, type StorageStatus } from './status.ts';
import { RunningTotals } from './totals.ts';

export type StorageState = 'not-ready' | 'ready' | 'error';
export type TaskName = 'gc-orphans' | 'disk-pressure-trim';

export interface StorageDeps {
  clock: Clock;
  log: Logger;
  probe: DiskProbe;
  /** What names this server in the directory's lock file for another one refused (its data
   *  dir): two servers must never record into one directory. */
  holder?: Record<string, string>;
}

export interface Attachment {
  settings: StreamDvrSettings;
  /** Recording in progress (the stream runs and writes here). */
  active: () => boolean;
}

interface Slot extends ProtectedRange {
  id: number;
}

export interface CleanupFigures {
  orphansAt: number;
  orphansDeleted: number;
  trimAt: number;
  trimFreedBytes: number;
  rollingDeleted: number;
  trimDeleted: number;
  emergencyDeleted: number;
}

export class ArchiveStorage {
  state: StorageState = 'not-ready';
  message = '';
  index?: ArchiveIndex;
  disk?: DiskFigures;
  readonly streams = new Map<string, Attachment>();
  pressureSince = 0;
  alarm = false;
  activeTask?: { name: TaskName; since: number };
  readonly last: CleanupFigures = {
    orphansAt: 0,
    orphansDeleted: 0,
    trimAt: 0,
    trimFreedBytes: 0,
    rollingDeleted: 0,
    trimDeleted: 0,
    emergencyDeleted: 0,
  };
  /** Rendered playlist blocks of this storage's index (dropped as chunks come and go). */
  readonly blocks = new PlaylistBlocks(
    (stream, track, from, to) => (this.index ? this.index.lean(stream, track, from, to) : []),
    (stream, track) => this.index?.extent(stream, track),
    BLOCK_CACHE_CHARS,
    () => this.index?.blocks,
  );
  /** Block (hour start) of the newest chunk indexed per stream and track: when it moves on,
   *  the hour before is closed and rendered ahead of the first request for it. */
  private newestBlock = new Map<string, number>();
  /** Written bytes over the last passes, for the write rate and the disk-full forecast. */
  readonly writes: { at: number; bytes: number }[] = [];
  private aboveSince = 0;
  private trimming = false;
  /** Seconds each stream owes size cleanup from earlier passes (its share's rounding to whole
   *  chunks), so depths stay proportional across passes and pressure episodes. */
  private readonly trimOwed = new Map<string, number>();
  private slots = new Map<number, Slot>();
  private slotSeq = 0;
  private timer?: Timer;
  private diskTimer?: Timer;
  private orphanTimer?: Timer;
  private orphanDue = false;
  /** The index was (re)opened: check it against the files on the next pass. */
  private reconcileDue = false;
  private passing?: Promise<void>;
  private scanning?: Promise<void>;
  private pending: NewChunk[] = [];
  private flushScheduled = false;
  /** Archived bytes / seconds per stream, kept up to date on insert and delete. */
  private running = new RunningTotals();
  private closed = false;
  /** Bytes written since the last pass (feeds `writes`). */
  private writtenSincePass = 0;
  /** Device and inodes of the directory and index file when the index was opened. */
  private identity?: { dev: number; ino: number; indexIno: number };
  /** This server's hold on the directory: taken before anything is written there, kept while
   *  the index is open. */
  private lock?: FileLock;

  constructor(
    public settings: StorageSettings,
    private deps: StorageDeps,
  ) {}

  get id(): number {
    return this.settings.id;
  }

  get dir(): string {
    return this.settings.dirPath;
  }

  get log(): Logger {
    return this.deps.log;
  }

  /** Start the pass timer and run the first probe now. */
  async start(): Promise<void> {
    this.schedule();
    this.diskTimer = this.deps.clock.setInterval(() => {
      void this.refreshDisk();
    }, DISK_REFRESH_MS);
    this.orphanTimer = this.deps.clock.setTimeout(() => {
      this.orphanDue = true;
      this.orphanTimer = this.deps.clock.setInterval(() => {
        this.orphanDue = true;
      }, ORPHAN_PERIOD_MS);
    }, ORPHAN_FIRST_DELAY_MS);
    await this.pass();
  }

  update(settings: StorageSettings): void {
    const interval = settings.cleanupIntervalSec !== this.settings.cleanupIntervalSec;
    this.settings = settings;
    if (interval) this.schedule();
  }

  private schedule(): void {
    this.timer?.cancel();
    this.timer = this.deps.clock.setInterval(() => {
      void this.pass();
    }, this.settings.cleanupIntervalSec * 1000);
  }

  // ---- binding, recording ---------------------------------------------------------------

  attach(stream: string, a: Attachment): void {
    this.streams.set(stream, a);
  }

  detach(stream: string, a?: Attachment): void {
    if (!a || this.streams.get(stream) === a) this.streams.delete(stream);
  }

  /** Recording is allowed only while Ready (spec 3: it stops in Error, resumes by itself). */
  get writable(): boolean {
    return this.state === 'ready' && !!this.index && !this.closed;
  }

  /** Queue an index row for a chunk whose file is in place; rows are inserted in batches. */
  commit(row: NewChunk): void {
    this.pending.push(row);
    this.writtenSincePass += row.bytes;
    if (this.flushScheduled) return;
    this.flushScheduled = true;
    setImmediate(() => this.flush());
  }

  /** Insert queued rows now (one transaction). */
  flush(): void {
    this.flushScheduled = false;
    const rows = this.pending;
    if (rows.length === 0 || !this.index) return;
    this.pending = [];
    try {
      const ids = this.index.insertMany(rows);
      this.running.added(rows.filter((_r, i) => ids[i] !== 0));
      for (const r of rows) this.blocks.invalidate(r.stream, r.track, r.start_ms);
      this.warmClosedBlocks(rows);
    } catch (err) {
      // The files stay on disk unindexed: the orphan scan removes them.
      this.log.error({ err, rows: rows.length }, 'archive index insert failed');
    }
  }

  private warmClosedBlocks(rows: NewChunk[]): void {
    for (const r of rows) {
      const key = `${r.stream}\u0000${r.track}`;
      const block = Math.floor(r.start_ms / BLOCK_MS) * BLOCK_MS;
      const before = this.newestBlock.get(key);
      if (before !== undefined && block <= before) continue;
      this.newestBlock.set(key, block);
      if (before === undefined) continue;
      // Off the insert path: one hour of one track is a few ms of rendering.
      setImmediate(() => {
        if (!this.index || this.closed) return;
        try {
          this.blocks.warm(r.stream, r.track, before);
        } catch (err) {
          this.log.warn({ err }, 'archive playlist block not rendered ahead');
        }
      });
    }
  }

  /** The init row id of (stream, track, hash), if indexed (src/dvr/recorder.ts). */
  async initId(stream: string, track: string, hash: string): Promise<number | undefined> {
    return this.index?.init(stream, track, hash)?.id;
  }

  async addInit(
    stream: string,
    track: string,
    hash: string,
    path: string,
    layout: string,
  ): Promise<number> {
    if (!this.index) throw new Error(`archive storage ${this.dir} has no index open`);
    return this.index.addInit(stream, track, hash, path, layout);
  }

  mark(stream: string, kind: MarkerKind, detail = ''): void {
    try {
      this.index?.mark(stream, this.deps.clock.now(), kind, detail);
    } catch (err) {
      this.log.warn({ err }, 'archive marker not written');
    }
  }

  // ---- session protection ---------------------------------------------------------------

  protect(stream: string, from: number, to: number): number {
    const id = ++this.slotSeq;
    this.slots.set(id, { id, stream, from, to });
    return id;
  }

  release(id: number): void {
    this.slots.delete(id);
  }

  get protectedRanges(): ProtectedRange[] {
    return [...this.slots.values()];
  }

  // ---- state machine and cleanup ------------------------------------------------------------

  /** One cleanup pass; concurrent callers share the running one. */
  pass(): Promise<void> {
    this.passing ??= this.runPass()
      .catch((err) => {
        // A pass that failed (say the index refused a write) is retried on the next tick; it
        // must not take the server down.
        this.log.error({ err }, 'archive cleanup pass failed');
      })
      .finally(() => {
        this.passing = undefined;
      });
    return this.passing;
  }

  private async runPass(): Promise<void> {
    if (this.closed) return;
    const now = this.deps.clock.now();
    this.writes.push({ at: now, bytes: this.writtenSincePass });
    this.writtenSincePass = 0;
    while (this.writes.length > 0 && now - this.writes[0]!.at > WRITE_RATE_WINDOW_MS)
      this.writes.shift();
    const probe = await this.probeDir();
    if (!probe.ok) {
      this.disk = undefined;
      if (probe.heldElsewhere) this.toError(probe.reason);
      else if (this.state === 'ready') this.toError(`directory unavailable: ${probe.reason}`);
      else if (this.state === 'error') this.message = `directory unavailable: ${probe.reason}`;
      else this.message = `not ready: ${probe.reason}`;
      if (this.state === 'error') this.closeIndex();
      if (!this.index) this.releaseLock();
      return;
    }
    const disk = probe.disk;
    this.disk = disk;
    const floor = this.settings.emergencyBytes;
    if (this.state !== 'ready') {
      const recovered =
        this.state === 'not-ready' ? disk.free >= floor : disk.free >= RECOVERY_FACTOR * floor;
      if (!this.openIndex()) return;
      if (recovered) this.toReady();
      else if (this.state === 'not-ready') this.toError(`free space below disk-emergency-bytes`);
      // Still short of space: say how much is free now and what recovery needs.
      if (this.state === 'error')
        this.message = `free space ${disk.free} below ${disk.free < floor ? 'disk-emergency-bytes' : '2 × disk-emergency-bytes (recovery)'} ${disk.free < floor ? floor : RECOVERY_FACTOR * floor}`;
    } else if (disk.free < floor) {
      this.toError(`free space ${disk.free} below disk-emergency-bytes ${floor}`);
    }
    if (!this.index) return;
    this.flush();
    if (this.reconcileDue) await this.reconcile();
    await this.rolling(now);
    this.trackPressure(disk, now);
    if (disk.free < floor) await this.emergency(disk, now);
    else if (this.trimming && (await this.sizeTrim(disk, now))) await this.afterTrim();
    if (this.orphanDue) {
      this.orphanDue = false;
      this.orphansInBackground();
    }
  }

  /**
   * Usage right after a size trim: the figure status reports and the one that ends a pressure
   * episode. The probe before the trim always holds the writes since the last pass, so judged
   * there usage never reads at the margin while recording goes on (spec 3 item 7).
   */
  private async afterTrim(): Promise<void> {
    let disk: DiskFigures;
    try {
      disk = await this.deps.probe(this.dir);
    } catch {
      return; // the next pass's probe says what is wrong with the directory
    }
    this.disk = disk;
    const pct = usedPercent(disk);
    if (pct <= this.settings.maxUsage - this.settings.hysteresis + CLEAR_SLACK_POINTS)
      this.pressureOver(pct);
  }

  /** Disk figures between passes, so status reports the usage of now (one statfs). Pressure
   *  is judged by the passes only. */
  private async refreshDisk(): Promise<void> {
    if (this.passing || this.state !== 'ready' || this.closed) return;
    try {
      const disk = await this.deps.probe(this.dir);
      if (!this.passing && this.state === 'ready') this.disk = disk;
    } catch {
      // The next pass's probe says what is wrong with the directory.
    }
  }

  private pressureOver(pct: number): void {
    if (this.alarm) this.log.info({ usedPercent: pct }, 'disk-full alarm cleared');
    this.alarm = false;
    this.pressureSince = 0;
    this.aboveSince = 0;
    this.trimming = false;
  }

  private async probeDir(): Promise<
    { ok: true; disk: DiskFigures } | { ok: false; reason: string; heldElsewhere?: boolean }
  > {
    try {
      // Created only before the storage was ever Ready: recreating a removed directory (or
      // writing into the bare mount point of an unmounted disk) would hide the failure.
      if (!this.identity) await mkdir(this.dir, { recursive: true });
      const st = await stat(this.dir);
      if (!st.isDirectory()) return { ok: false, reason: 'not a directory' };
      const moved = await this.identityChanged(st);
      if (moved) return { ok: false, reason: moved };
      await access(this.dir, constants.W_OK | constants.R_OK);
      const held = this.takeLock();
      if (held) return { ok: false, reason: held, heldElsewhere: true };
      if (this.state !== 'ready') {
        // A real write proves the file system takes data (read-only mounts pass access()).
        const probe = join(this.dir, PROBE_FILE);
        await writeFile(probe, '');
        await unlink(probe);
      }
      return { ok: true, disk: await this.deps.probe(this.dir) };
    } catch (err) {
      return { ok: false, reason: (err as Error).message };
    }
  }

  /**
   * Why the directory is no longer the one the index was opened in (undefined: it is).
   * While the index is open: the directory and the index file must keep their inodes (a
   * removed and recreated directory, or an unmount, changes them). Back from Error: the
   * directory must be on the same file system as before, or hold an index (a remount).
   */
  private async identityChanged(st: { dev: number; ino: number }): Promise<string | undefined> {
    const id = this.identity;
    if (!id) return undefined;
    const indexIno = await stat(join(this.dir, INDEX_FILE)).then(
      (s) => s.ino,
      () => undefined,
    );
    if (this.index) {
      if (st.dev !== id.dev || st.ino !== id.ino) return 'directory removed or replaced';
      if (indexIno !== id.indexIno) return 'index file removed';
      return undefined;
    }
    if (st.dev !== id.dev && indexIno === undefined)
      return 'directory is on another file system than before and holds no index (not mounted?)';
    return undefined;
  }

  /** Lock the directory for this server; the refusal's reason when another server has it. */
  private takeLock(): string | undefined {
    if (this.lock?.held) return undefined;
    const got = FileLock.take(join(this.dir, LOCK_FILE), {
      ...this.deps.holder,
      storage: String(this.settings.id),
    });
    if ('lock' in got) {
      this.lock = got.lock;
      return undefined;
    }
    return (
      `directory ${this.dir} is in use by another sluice server (${describeHolder(got.heldBy)}): ` +
      'two servers must not record into one directory. Give this storage another dir-path, or ' +
      'stop the other server; the storage becomes ready by itself once the other lets go'
    );
  }

  private releaseLock(): void {
    this.lock?.release();
    this.lock = undefined;
  }

  private openIndex(): boolean {
    if (this.index) return true;
    try {
      this.index = new ArchiveIndex(join(this.dir, INDEX_FILE));
      const st = statSync(this.dir);
      this.identity = { dev: st.dev, ino: st.ino, indexIno: statSync(this.index.file).ino };
      this.running.reset(this.index);
      this.blocks.clear();
      this.reconcileDue = true;
      return true;
    } catch (err) {
      this.message = `index: ${(err as Error).message}`;
      return false;
    }
  }

  private closeIndex(): void {
    this.flush();
    this.index?.close();
    this.index = undefined;
    this.blocks.clear();
  }

  private toReady(): void {
    const from = this.state;
    this.state = 'ready';
    this.message = '';
    this.log.info({ from }, 'archive storage ready; recording allowed');
  }

  private toError(reason: string): void {
    if (this.state !== 'error')
      this.log.error({ reason }, 'archive storage error; recording stops');
    this.state = 'error';
    this.message = reason;
  }

  private bound(): BoundStream[] {
    return [...this.streams].map(([name, a]) => ({
      name,
      hours: a.settings.hours,
      minHours: a.settings.minHours,
    }));
  }

  private async rolling(now: number): Promise<void> {
    const rows = chooseRolling(this.index!, this.bound(), now, this.protectedRanges);
    if (rows.length === 0) return;
    this.last.rollingDeleted += rows.length;
    await this.remove(rows, 'rolling');
  }

  /** Pressure episode, grace timer and disk-full alarm (hysteresis below max-usage). */
  private trackPressure(disk: DiskFigures, now: number): void {
    const pct = usedPercent(disk);
    const s = this.settings;
    if (pct > s.maxUsage) {
      if (this.pressureSince === 0) {
        this.pressureSince = now;
        this.orphanDue = true;
        this.log.warn({ usedPercent: pct }, 'disk-full alarm: usage above max-usage');
      }
      this.alarm = true;
      if (this.aboveSince === 0) this.aboveSince = now;
      if (now - this.aboveSince >= s.graceSec * 1000) this.trimming = true;
    } else {
      if (!this.trimming) this.aboveSince = 0;
      if (pct <= s.maxUsage - s.hysteresis) this.pressureOver(pct);
    }
  }

  /** Size cleanup down to the margin; whether it removed anything. */
  private async sizeTrim(disk: DiskFigures, now: number): Promise<boolean> {
    const target = ((this.settings.maxUsage - this.settings.hysteresis) / 100) * disk.total;
    const need = disk.used - target;
    if (need <= 0) return false;
    const streams = [...this.streams.keys()];
    for (const s of this.trimOwed.keys()) if (!this.streams.has(s)) this.trimOwed.delete(s);
    const rows = chooseTrim(this.index!, streams, {
      needBytes: need,
      now,
      bytes: this.streamBytes(),
      seconds: this.streamSeconds(),
      owed: this.trimOwed,
      cutSec: this.settings.cutSec,
      ranges: this.protectedRanges,
      minHours: new Map([...this.streams].map(([n, a]) => [n, a.settings.minHours])),
    });
    if (rows.length === 0) return false;
    this.last.trimDeleted += rows.length;
    const freed = await this.task('disk-pressure-trim', () => this.remove(rows, 'size'));
    this.last.trimAt = now;
    this.last.trimFreedBytes = freed;
    return true;
  }

  private async emergency(disk: DiskFigures, now: number): Promise<void> {
    const floor = this.settings.emergencyBytes;
    const need = RECOVERY_FACTOR * floor - disk.free;
    const bytes = this.streamBytes();
    const rows = chooseTrim(this.index!, [...bytes.keys()], {
      needBytes: need,
      now,
      bytes,
      seconds: this.streamSeconds(),
      cutSec: Number.POSITIVE_INFINITY,
      ranges: [],
      minHours: new Map(),
    });
    if (rows.length === 0) return;
    this.last.emergencyDeleted += rows.length;
    const freed = await this.task('disk-pressure-trim', () => this.remove(rows, 'emergency'));
    this.last.trimAt = now;
    this.last.trimFreedBytes = freed;
  }

  /** Index rebuild at open: drop rows of the newest chunks whose files are gone (marker
   *  `index-rebuild` per stream with the figures). */
  private async reconcile(): Promise<void> {
    this.reconcileDue = false;
    const index = this.index!;
    const res = await reconcileTail(this.dir, index);
    if (this.index !== index) return;
    for (const [stream, r] of res.streams) {
      if (r.removed.length > 0) {
        this.running.removed(r.removed, index);
        for (const row of r.removed) this.blocks.invalidate(row.stream, row.track, row.start_ms);
        this.log.warn(
          { stream, rows: r.removed.length },
          'archive index rows without a file removed',
        );
      }
      this.mark(
        stream,
        'index-rebuild',
        `checked ${r.checked}, removed ${r.removed.length} rows without a file`,
      );
    }
  }

  /**
   * The orphan scan outside the pass: a scan of a large directory takes seconds, and the
   * passes (size cleanup, fresh disk figures for status) must not wait for it.
   */
  private orphansInBackground(): void {
    if (this.scanning) return;
    this.scanning = this.orphans()
      .catch((err) => this.log.warn({ err }, 'archive orphan scan failed'))
      .finally(() => {
        this.scanning = undefined;
      });
  }

  /** The orphan scan under way, if any (it runs beside the passes). */
  get orphanScan(): Promise<void> | undefined {
    return this.scanning;
  }

  async orphans(): Promise<void> {
    if (!this.index) return;
    const index = this.index;
    const res = await this.task('gc-orphans', async () => {
      const gone = () => this.closed || this.index !== index;
      const r = await scanOrphans(this.dir, index, this.deps.clock.now(), undefined, gone);
      return r.deleted;
    });
    this.last.orphansAt = this.deps.clock.now();
    this.last.orphansDeleted = res;
  }

  private async task(name: TaskName, fn: () => Promise<number>): Promise<number> {
    // The orphan scan runs beside the passes: the task reported is the one started last.
    const mine = { name, since: this.deps.clock.monotonic() };
    this.activeTask = mine;
    try {
      return await fn();
    } finally {
      if (this.activeTask === mine) this.activeTask = undefined;
    }
  }

  /** Index rows first, files after: a crash in between leaves orphans, never dangling rows. */
  private async remove(rows: ChunkRow[], why: string): Promise<number> {
    const index = this.index!;
    const ids = rows.map((r) => r.id);
    try {
      index.deleteMany(ids);
    } catch (err) {
      if ((err as { code?: string }).code !== 'SQLITE_FULL') throw err;
      // A full disk refuses even the index's deletions: the files go first to make room, and
      // rows whose files are gone until the retry answer 404 like any removed chunk.
      this.log.warn({ why, chunks: rows.length }, 'archive index full: files removed first');
      await this.unlinkAll(rows.map((r) => r.path));
      index.deleteMany(ids);
    }
    const inits = index.unusedInits();
    for (const i of inits) index.deleteInit(i.id);
    this.running.removed(rows, index);
    for (const r of rows) this.blocks.invalidate(r.stream, r.track, r.start_ms);
    let freed = 0;
    await this.unlinkAll([...rows.map((r) => r.path), ...inits.map((i) => i.path)]);
    for (const r of rows) freed += r.bytes;
    const byStream = new Map<string, number>();
    for (const r of rows) byStream.set(r.stream, (byStream.get(r.stream) ?? 0) + 1);
    for (const [s, n] of byStream) this.mark(s, 'cleanup', `${why}: ${n} chunks`);
    this.log.info({ why, chunks: rows.length, bytes: freed }, 'archive cleanup');
    return freed;
  }

  private async unlinkAll(paths: string[]): Promise<void> {
    for (let i = 0; i < paths.length; i += UNLINK_PARALLEL) {
      await Promise.all(
        paths.slice(i, i + UNLINK_PARALLEL).map(async (p) => {
          try {
            await unlink(join(this.dir, p));
          } catch {
            // Already gone: nothing to free.
          }
        }),
      );
    }
  }

  // ---- figures ------------------------------------------------------------------------------

  /** The index was written outside commit()/cleanup (tools, tests): drop cached figures. */
  indexChanged(): void {
    this.running.reset(this.index);
    this.blocks.clear();
  }

  totals(): Map<string, StreamTotals> {
    if (!this.index) return new Map();
    return this.running.streams();
  }

  streamBytes(): Map<string, number> {
    return new Map([...this.totals()].map(([k, v]) => [k, v.bytes]));
  }

  /** Archived seconds of each stream's main track (what size cleanup shares out). */
  streamSeconds(): Map<string, number> {
    return new Map([...this.totals()].map(([k, v]) => [k, v.seconds]));
  }

  /** Seconds the active task has run, when it has run long enough to report. */
  activeTaskReport(): { name: TaskName | 'none'; seconds: number } {
    const t = this.activeTask;
    const ms = t ? this.deps.clock.monotonic() - t.since : 0;
    if (!t || ms < ACTIVE_TASK_MIN_MS) return { name: 'none', seconds: 0 };
    return { name: t.name, seconds: Math.floor(ms / 1000) };
  }

  status(): StorageStatus {
    return buildStatus(this, this.deps.clock.now());
  }

  async close(): Promise<void> {
    this.closed = true;
    this.timer?.cancel();
    this.diskTimer?.cancel();
    this.orphanTimer?.cancel();
    await this.passing;
    await this.scanning;
    this.closeIndex();
    this.releaseLock();
  }
}

/** How often status's disk figures are refreshed between passes. */
const DISK_REFRESH_MS = 1_000;
/** Window over which the write rate (and the disk-full forecast) is averaged. */
export const WRITE_RATE_WINDOW_MS = 300_000;
const UNLINK_PARALLEL = 32;
/** Usage within this many points above the margin after a trim counts as at the margin: the
 *  file system's own bookkeeping (blocks of the index, directory entries) and the chunks
 *  written during the trim are not chunk bytes the trim could have known of. */
const CLEAR_SLACK_POINTS = 0.25;
