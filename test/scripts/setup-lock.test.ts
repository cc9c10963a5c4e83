// The README's commands leave a clean checkout: scripts/setup (run by both, and by the test
// command before this file) installs what package-lock.json says without rewriting it. npm
// adds or drops other platforms' optional packages in the lock file depending on its version.
import { execFileSync } from 'node:child_process';
import t from 'tap';
import { REPO_ROOT } from '../helpers/server.ts';

t.test('package-lock.json is as committed after set-up', async (t) => {
  const changed = execFileSync('git', ['status', '--porcelain', '--', 'package-lock.json'], {
    cwd: REPO_ROOT,
    encoding: 'utf8',
  });
  t.equal(changed, '', 'git status shows no change to package-lock.json');
});
