// The two test tiers hold: the unit tier is every file that starts no child process (found by
// its imports, with the exceptions of scripts/test-tiers.json), and in that tier a child process
// throws with a message naming the file and what to do. (This file starts one: integration.)
import { execFileSync } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import t from 'tap';
import { integration, startsChild, testFiles, tierOf } from '../../scripts/test-order.ts';
import { REPO_ROOT } from '../helpers/server.ts';

t.test('every file the tier lists name exists', async (t) => {
  const serial: string[] = JSON.parse(readFileSync(join(REPO_ROOT, 'package.json'), 'utf8')).tap
    .serial;
  for (const f of [...Object.keys(integration), ...serial]) t.ok(existsSync(join(REPO_ROOT, f)), f);
  for (const [f, why] of Object.entries(integration)) t.ok(why.length > 10, `${f}: says why`);
});

t.test(
  'a child process anywhere in a file’s test/ imports puts it in the integration tier',
  async (t) => {
    t.equal(tierOf('test/layers.test.ts'), 'unit', 'only REPO_ROOT of the server helper');
    t.match(
      startsChild('test/docs/sh-examples.test.ts'),
      /test\/docs\/run\.ts/,
      'through a sibling',
    );
    t.match(startsChild('test/scripts/test-tiers.test.ts'), /node:child_process/);
    t.equal(tierOf('test/epg/sql.test.ts'), 'parallel', 'named in scripts/test-tiers.json');
    t.equal(tierOf('test/stream/flood.test.ts'), 'serial');
    const unit = testFiles().filter((f) => tierOf(f) === 'unit');
    t.ok(unit.length > 100, `${unit.length} files in the unit tier`);
  },
);

t.test('in the unit tier a child process throws, naming the file and the way out', async (t) => {
  const out = execFileSync(
    process.execPath,
    [
      '--import=./test/helpers/unit-guard.mjs',
      '--input-type=module',
      '-e',
      "import { execFileSync } from 'node:child_process'; try { execFileSync('true'); } catch (e) { console.log(e.message); }",
    ],
    { cwd: REPO_ROOT, encoding: 'utf8' },
  );
  t.match(
    out,
    /is in the unit tier, which starts no child process, but it ran execFileSync\("true"\)/,
  );
  t.match(out, /scripts\/test-tiers\.json/);
});
