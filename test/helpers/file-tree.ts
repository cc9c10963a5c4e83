// What a directory tree holds, as a comparable record (path → kind, size, mtime): a test takes
// one before and one after a step to show the step wrote nothing there.
import { lstat, readdir } from 'node:fs/promises';
import { join } from 'node:path';

/** Every entry under `root` (recursively) by its path relative to it. */
export async function fileTree(root: string): Promise<Record<string, string>> {
  const out: Record<string, string> = {};
  const walk = async (dir: string, rel: string): Promise<void> => {
    for (const name of (await readdir(dir)).sort()) {
      const st = await lstat(join(dir, name));
      const key = rel ? `${rel}/${name}` : name;
      out[key] = `${st.isDirectory() ? 'dir' : 'file'} ${st.size} bytes, mtime ${st.mtimeMs}`;
      if (st.isDirectory()) await walk(join(dir, name), key);
    }
  };
  await walk(root, '');
  return out;
}
