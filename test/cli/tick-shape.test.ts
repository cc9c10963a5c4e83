// bin/tick-shape.js keeps V8's record of Node's nextTick task-object shapes valid across full
// collections. Without it, collections that run while no task object is alive free those
// shapes, and the task-object literal's property definitions turn megamorphic for the life of
// the process (every later tick then defines them through the runtime). The record is read
// from V8's own dump of `process.nextTick` (`%DebugPrint`, natives syntax in a child process).
import { spawnSync } from 'node:child_process';
import { closeSync, openSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { pathToFileURL } from 'node:url';
import t from 'tap';
import { REPO_ROOT } from '../helpers/server.ts';
import { type TapLike, tempDir } from '../helpers/stream-host.ts';

const MODULE = pathToFileURL(path.join(REPO_ROOT, 'bin/tick-shape.js')).href;

/** The child: ticks, six full collections with no task object alive, ticks, then the dump. */
function childSource(keep: boolean): string {
  return `
    const burst = (n) => { for (let i = 0; i < n; i++) process.nextTick(() => {}, i); };
    const run = () => {
      burst(20000);
      setTimeout(() => {
        for (let i = 0; i < 6; i++) gc();
        burst(20000);
        setTimeout(() => %DebugPrint(process.nextTick), 0);
      }, 0);
    };
    ${keep ? `import(${JSON.stringify(MODULE)}).then((m) => { m.keepTickObjectShape(); run(); });` : 'run();'}
  `;
}

/** The feedback states of the task-object literal's property definitions, in slot order. */
function literalStates(t: TapLike, keep: boolean): string[] {
  // The dump goes to a file: read through a pipe under tap, it came back cut short.
  const out = path.join(tempDir(t, 'sluice-test-tick-'), 'dump.txt');
  const fd = openSync(out, 'w');
  try {
    const r = spawnSync(
      process.execPath,
      // --single-threaded: no concurrent compile or marking job may hold the shapes across the
      // collections (with them, the case without the module stayed monomorphic in some runs).
      ['--expose-gc', '--allow-natives-syntax', '--single-threaded', '-e', childSource(keep)],
      {
        // A bare environment: tap's loaders and coverage (NODE_OPTIONS, NODE_V8_COVERAGE) would
        // change what V8 records.
        env: { PATH: process.env.PATH },
        stdio: ['ignore', fd, 'pipe'],
        encoding: 'utf8',
        timeout: 60_000,
      },
    );
    if (r.status !== 0) throw new Error(`child exited ${r.status}: ${r.stderr}`);
  } finally {
    closeSync(fd);
  }
  const dump = readFileSync(out, 'utf8');
  return [...dump.matchAll(/slot #\d+ DefineKeyedOwnPropertyInLiteral (\w+)/g)].map((m) => m[1]!);
}

t.test('with the kept task object, every property definition stays monomorphic', async (t) => {
  const states = literalStates(t, true);
  t.equal(states.length, 4, 'four properties in the literal (V8 dump format understood)');
  t.same(states, ['MONOMORPHIC', 'MONOMORPHIC', 'MONOMORPHIC', 'MONOMORPHIC']);
});

t.test(
  'without it, the same collections turn them megamorphic (what the module prevents)',
  async (t) => {
    const states = literalStates(t, false);
    t.equal(states.length, 4, 'four properties in the literal');
    t.ok(
      states.includes('MEGAMORPHIC'),
      `this Node loses the shapes (states: ${states.join(', ')}); if it no longer does, bin/tick-shape.js may be obsolete`,
    );
  },
);
