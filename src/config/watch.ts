// The file source: the config file on disk, written atomically on API edits and watched with
// chokidar for outside edits (an editor, `sluice fmt`, a deploy tool). Events are debounced;
// the file is read inside the config service's queue and compared by content hash, so our own
// writes and no-op saves never cause a second apply.
import { readFile } from 'node:fs/promises';
import path from 'node:path';
import { type FSWatcher, watch } from 'chokidar';
import type { Logger } from 'pino';
import type { Clock, Timer } from '../util/clock.ts';
import type { ConfigPersister, ConfigServiceImpl, RefreshOutcome } from './service.ts';
import { emptyConfigText } from './service.ts';
import { removeStaleTempFiles, writeFileAtomic } from './store.ts';

/** Quiet time after the last file event before the file is read (editors write in bursts). */
export const WATCH_DEBOUNCE_MS = 200;

/** Writes API edits to the file atomically (temp file, fsync, rename). */
export class FilePersister implements ConfigPersister {
  constructor(private readonly file: string) {}

  async persist(text: string): Promise<{ commit?: string }> {
    await writeFileAtomic(this.file, text);
    return {};
  }
}

/** The file's text, or undefined when it does not exist (yet). */
export async function readConfigFile(file: string): Promise<string | undefined> {
  try {
    return await readFile(file, 'utf8');
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return undefined;
    throw err;
  }
}

export interface FileWatcherOptions {
  file: string;
  service: ConfigServiceImpl;
  clock: Clock;
  log: Logger;
  debounceMs?: number;
  /** Called after each refresh (tests wait on it). */
  onRefresh?: (outcome: RefreshOutcome) => void;
}

export class FileWatcher {
  private watcher: FSWatcher | undefined;
  private timer: Timer | undefined;
  private readonly file: string;
  private closed = false;

  constructor(private readonly opts: FileWatcherOptions) {
    this.file = path.resolve(opts.file);
  }

  /** Start watching. Resolves once chokidar has scanned the directory. */
  async start(): Promise<void> {
    const dir = path.dirname(this.file);
    const stale = await removeStaleTempFiles(this.file);
    if (stale.length)
      this.opts.log.info({ removed: stale }, 'removed temp files of a crashed write');
    // Watch the directory, not the file: an editor's save (write temp + rename over) replaces
    // the inode, and a watch on the old inode would go silent.
    const watcher = watch(dir, {
      depth: 0,
      ignoreInitial: true,
      ignored: (p: string) => p !== dir && path.resolve(p) !== this.file,
    });
    this.watcher = watcher;
    watcher.on('all', (_event, p) => {
      if (path.resolve(p) === this.file) this.schedule();
    });
    watcher.on('error', (err) => this.opts.log.error({ err }, 'config watcher error'));
    await new Promise<void>((resolve) => watcher.once('ready', () => resolve()));
    // A save between the start-up read and the watch being ready raised no event: read once
    // more (a no-op when the text is the one already applied).
    this.schedule();
  }

  private schedule(): void {
    if (this.closed) return;
    this.timer?.cancel();
    this.timer = this.opts.clock.setTimeout(() => {
      this.timer = undefined;
      void this.refresh();
    }, this.opts.debounceMs ?? WATCH_DEBOUNCE_MS);
  }

  /**
   * Read the file (inside the service's queue) and apply it when it changed. `initial`: the
   * first read at start-up, where a missing file means an empty config (created on first edit).
   */
  async refresh(initial = false): Promise<RefreshOutcome> {
    let outcome: RefreshOutcome = 'unchanged';
    try {
      outcome = await this.opts.service.refresh(async () => {
        const text = await readConfigFile(this.file);
        if (text === undefined && initial) {
          this.opts.log.info({ file: this.file }, 'no config file yet; starting from {}');
          return { text: emptyConfigText(), origin: 'file' };
        }
        if (text === undefined) {
          // A deleted file is most likely a save in progress or a mistake; destroying every
          // resource because of it would be worse than keeping the last good config.
          this.opts.log.warn({ file: this.file }, 'config file is gone; keeping the last config');
          return null;
        }
        return { text, origin: 'file' };
      });
    } catch (err) {
      this.opts.log.error({ err, file: this.file }, 'reading the config file failed');
    }
    this.opts.onRefresh?.(outcome);
    return outcome;
  }

  async close(): Promise<void> {
    this.closed = true;
    this.timer?.cancel();
    await this.watcher?.close();
  }
}
