// The lines every bench prints first: CPU kind, core count, git commit and load average, and the
// load average again when it exits — a figure is quotable only with the machine and load it ran on.
import { execFileSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { cpus, loadavg } from 'node:os';

/** The CPU's model name as `lscpu` gives it (falls back to /proc/cpuinfo, then Node's). */
export function cpuModel(): string {
  try {
    const out = execFileSync('lscpu', { encoding: 'utf8', env: { ...process.env, LC_ALL: 'C' } });
    const m = /^Model name:\s*(.+)$/m.exec(out);
    if (m) return m[1]!.trim();
  } catch {
    // no lscpu on this machine: /proc/cpuinfo says the same
  }
  try {
    const m = /^model name\s*:\s*(.+)$/m.exec(readFileSync('/proc/cpuinfo', 'utf8'));
    if (m) return m[1]!.trim();
  } catch {
    // not Linux
  }
  return cpus()[0]?.model ?? 'unknown CPU';
}

/** The checked-out commit, `+dirty` when tracked files differ from it. */
export function gitCommit(): string {
  const git = (args: string[]) =>
    execFileSync('git', args, { cwd: import.meta.dirname, encoding: 'utf8' }).trim();
  try {
    const head = git(['rev-parse', '--short=12', 'HEAD']);
    return git(['status', '--porcelain', '--untracked-files=no']) ? `${head}+dirty` : head;
  } catch {
    return 'unknown commit (not a git checkout)';
  }
}

export const loadAverage = (): string =>
  loadavg()
    .map((x) => x.toFixed(2))
    .join(' ');

let printed = false;

/** Print the bench's header (once per process), and the load average when the process exits.
 *  Call it in the bench's own process only, never in the children it runs: their stdout is
 *  read by the parent. */
export function benchHeader(name: string): void {
  if (printed) return;
  printed = true;
  console.log(
    `# ${name} · CPU ${cpuModel()} × ${cpus().length} · commit ${gitCommit()} · ${new Date().toISOString()}`,
  );
  console.log(`# load average (1, 5, 15 min) before: ${loadAverage()}`);
  process.on('exit', () => console.log(`# load average (1, 5, 15 min) after: ${loadAverage()}`));
}
