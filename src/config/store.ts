// Write side of the config store (atomic replace of the file), and the one import point for
// the whole config layer: load, defaults, minimal form, format, field rules.
import { randomBytes } from 'node:crypto';
import { open, readdir, rename, stat, unlink } from 'node:fs/promises';
import { basename, dirname, join } from 'node:path';

export { applyDefaults } from './defaults.ts';
export { formatConfig, formatConfigOver } from './format.ts';
export { formatIssue, formatIssues } from './issues.ts';
export { elideDefaults } from './minimal.ts';
export { loadConfigText, loadProposedText, placeIssues } from './parse.ts';
export { fieldRules } from './schema.ts';

/** Mode of a config file written where none existed (it holds passwords). */
const NEW_FILE_MODE = 0o600;

/**
 * Replace `path` by `text` so a reader (or a crash) only ever sees the old or the new file:
 * write a temp file in the same directory, fsync it, rename it over, fsync the directory.
 * `mode` forces the permissions of the result.
 */
export async function writeFileAtomic(
  path: string,
  text: string,
  opts: { mode?: number } = {},
): Promise<void> {
  const dir = dirname(path);
  const tmp = join(dir, `.${basename(path)}.${process.pid}.${randomBytes(6).toString('hex')}.tmp`);
  // Keep the permissions of the file being replaced (unless told otherwise); a new file holds
  // secrets, so owner only.
  const mode =
    opts.mode ??
    (await stat(path).then(
      (s) => s.mode & 0o7777,
      () => NEW_FILE_MODE,
    ));
  const fh = await open(tmp, 'wx', mode);
  try {
    await fh.chmod(mode);
    await fh.writeFile(text, 'utf8');
    await fh.sync();
  } catch (e) {
    await fh.close();
    await unlink(tmp).catch(() => {});
    throw e;
  }
  await fh.close();
  try {
    await rename(tmp, path);
  } catch (e) {
    await unlink(tmp).catch(() => {});
    throw e;
  }
  const dh = await open(dir, 'r');
  try {
    await dh.sync();
  } finally {
    await dh.close();
  }
}

/** Pid of a process, or undefined when it is gone (or not ours to signal). */
function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (e) {
    return (e as NodeJS.ErrnoException).code === 'EPERM';
  }
}

/**
 * Remove temp files a crashed writer left beside `path` (`.<name>.<pid>.<hex>.tmp` of a pid
 * that no longer runs). A kill -9 between open and rename leaves one; the file itself is whole.
 * Returns the names removed.
 */
export async function removeStaleTempFiles(path: string): Promise<string[]> {
  const dir = dirname(path);
  const prefix = `.${basename(path)}.`;
  const removed: string[] = [];
  const names = await readdir(dir).catch(() => [] as string[]);
  for (const name of names) {
    if (!name.startsWith(prefix) || !name.endsWith('.tmp')) continue;
    const pid = Number(name.slice(prefix.length).split('.')[0]);
    if (!Number.isInteger(pid) || pid === process.pid || alive(pid)) continue;
    await unlink(join(dir, name)).then(
      () => removed.push(name),
      () => {},
    );
  }
  return removed;
}
