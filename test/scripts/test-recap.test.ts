// scripts/test's closing recap, fed a TAP log captured from tap itself (three files run side by
// side: nested failures, a thrown error, a TODO, a file that exited early, one that passed).
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import t from 'tap';
import { recap } from '../../scripts/test-recap.ts';

const log = readFileSync(join(import.meta.dirname, 'fixtures/recap.tap'), 'utf8');

t.test(
  'each failing file, then each failing assertion with its subtest path and line',
  async (t) => {
    t.strictSame(recap(log), [
      'FAILED test/tmp-recap/a.test.ts',
      '  outer > inner > one is two  (test/tmp-recap/a.test.ts:4)',
      '  outer > outer assertion  (test/tmp-recap/a.test.ts:7)',
      '  throws > boom  (test/tmp-recap/a.test.ts:11)',
      'FAILED test/tmp-recap/c.test.ts',
      '  (the file itself: exit code 3)',
    ]);
  },
);

t.test('a passing log recaps to nothing', async (t) => {
  const passing = log.slice(log.indexOf('# Subtest: test/tmp-recap/b.test.ts'));
  t.strictSame(recap(passing.slice(0, passing.indexOf('# Subtest: test/tmp-recap/c'))), []);
});

t.test('at most the given number of lines, the last one says where the rest is', async (t) => {
  const lines = recap(log, 4);
  t.equal(lines.length, 4);
  t.equal(lines[3], '… and 3 more lines: search the log for "not ok"');
});
