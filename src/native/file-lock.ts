// A kernel lock on a file (native/fs/file_lock.cc): one holder at a time, gone when the holder
// releases it or dies (kill -9 too), so a stale lock never blocks a restart. The file carries
// the holder's details as JSON, for the message of whoever is refused.
import { closeSync, ftruncateSync, readFileSync, writeSync } from 'node:fs';
import { hostname } from 'node:os';
import { addon } from './addon.ts';
import { argError, fromNative } from './errors.ts';

/** Who holds a lock, as it wrote itself into the lock file. */
export interface LockHolder {
  pid: number;
  host: string;
  /** When the holder took the lock (ISO 8601). */
  since: string;
  /** What else tells an operator which server it is (admin address, node, data dir). */
  details: Record<string, string>;
}

export type LockAttempt =
  | { lock: FileLock }
  /** Held elsewhere; the holder is undefined when its details are not written yet. */
  | { heldBy: LockHolder | undefined };

export class FileLock {
  private fd: number | undefined;
  private holder: LockHolder;

  private constructor(
    readonly path: string,
    fd: number,
    details: Record<string, string>,
  ) {
    this.fd = fd;
    this.holder = {
      pid: process.pid,
      host: hostname(),
      since: new Date().toISOString(),
      details: {},
    };
    this.describe(details);
  }

  /** Lock `path` (created if absent) for this process, or say who holds it. */
  static take(path: string, details: Record<string, string> = {}): LockAttempt {
    if (typeof path !== 'string' || path === '') throw argError('path must be a non-empty string');
    checkDetails(details);
    let fd: number;
    try {
      fd = addon().lockFile(path);
    } catch (err) {
      throw fromNative(err);
    }
    if (fd < 0) return { heldBy: readLockHolder(path) };
    return { lock: new FileLock(path, fd, details) };
  }

  get held(): boolean {
    return this.fd !== undefined;
  }

  /** Add to (or change) the details the file shows, e.g. the admin address once listening. */
  describe(details: Record<string, string>): void {
    checkDetails(details);
    if (this.fd === undefined) return;
    this.holder = { ...this.holder, details: { ...this.holder.details, ...details } };
    const text = Buffer.from(`${JSON.stringify(this.holder)}\n`);
    // Rewritten in place: the file is never replaced, since the lock is on its inode.
    ftruncateSync(this.fd, 0);
    writeSync(this.fd, text, 0, text.length, 0);
  }

  /** Give the lock up. The file stays (see native/fs/file_lock.cc); idempotent. */
  release(): void {
    if (this.fd === undefined) return;
    const fd = this.fd;
    this.fd = undefined;
    closeSync(fd);
  }
}

function checkDetails(details: Record<string, string>): void {
  if (details === null || typeof details !== 'object') throw argError('details must be an object');
  for (const [k, v] of Object.entries(details)) {
    if (typeof v !== 'string') throw argError(`details.${k} must be a string`);
  }
}

/** The holder a lock file names, or undefined when it names none (empty, or being written). */
export function readLockHolder(path: string): LockHolder | undefined {
  try {
    const h = JSON.parse(readFileSync(path, 'utf8')) as Partial<LockHolder>;
    if (typeof h.pid !== 'number' || typeof h.host !== 'string' || typeof h.since !== 'string')
      return undefined;
    return { pid: h.pid, host: h.host, since: h.since, details: { ...h.details } };
  } catch {
    return undefined;
  }
}

/** One line naming a holder for an operator: `pid 12 on host h, since …, admin http://…`. */
export function describeHolder(h: LockHolder | undefined): string {
  if (!h) return 'a process that has not written its details yet';
  const more = Object.entries(h.details).map(([k, v]) => `, ${k} ${v}`);
  return `pid ${h.pid} on host ${h.host}, since ${h.since}${more.join('')}`;
}
