// Temp files left by a writer killed between open and rename are removed at start;
// those of a live writer are not.
import { spawnSync } from 'node:child_process';
import { mkdtemp, readdir, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import t from 'tap';
import { removeStaleTempFiles } from '../../src/config/store.ts';

t.test('removes temp files of dead writers only', async (t) => {
  const dir = await mkdtemp(join(tmpdir(), 'sluice-stale-'));
  t.teardown(() => rm(dir, { recursive: true, force: true }));
  const file = join(dir, 'config.json');
  await writeFile(file, '{}\n');
  // A pid that surely ran and ended: a finished child's.
  const dead = spawnSync('true').pid;
  const deadTmp = `.config.json.${dead}.abcdef.tmp`;
  const liveTmp = `.config.json.${process.ppid}.012345.tmp`;
  const other = `.other.json.${dead}.abcdef.tmp`;
  for (const n of [deadTmp, liveTmp, other]) await writeFile(join(dir, n), '{');
  const removed = await removeStaleTempFiles(file);
  t.same(removed, [deadTmp]);
  t.same((await readdir(dir)).sort(), [liveTmp, other, 'config.json'].sort());
});
