// Preloaded into every file of the unit tier (scripts/test unit): starting a child process
// throws, so a file that reaches an external binary or a server process through src/ fails
// loudly instead of quietly making the fast tier slow. The rule: scripts/test-order.ts, tierOf.
import childProcess from 'node:child_process';
import { syncBuiltinESMExports } from 'node:module';

const file = process.argv[1] ?? 'this test file';
for (const name of ['spawn', 'spawnSync', 'exec', 'execSync', 'execFile', 'execFileSync', 'fork']) {
  childProcess[name] = (command) => {
    throw new Error(
      `${file} is in the unit tier, which starts no child process, but it ran ${name}(${JSON.stringify(
        String(command),
      )}); name it in scripts/test-tiers.json with the reason (the rule: scripts/test-order.ts)`,
    );
  };
}
syncBuiltinESMExports();
