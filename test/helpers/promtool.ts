// `promtool check metrics` (Debian package `prometheus`, installed by scripts/setup) on a
// scrape: Prometheus' own linter of names, types, units and help texts.
import { spawn } from 'node:child_process';

const PROMTOOL = 'promtool';

/** Run `promtool check metrics` on `text`; resolves with its exit code and output. */
export function promtoolCheck(text: string): Promise<{ code: number | null; out: string }> {
  return new Promise((resolve, reject) => {
    const p = spawn(PROMTOOL, ['check', 'metrics'], { stdio: ['pipe', 'pipe', 'pipe'] });
    let out = '';
    p.stdout.on('data', (b: Buffer) => {
      out += b.toString();
    });
    p.stderr.on('data', (b: Buffer) => {
      out += b.toString();
    });
    p.once('error', (err) =>
      reject(new Error(`${PROMTOOL} cannot run (${err.message}): run scripts/setup`)),
    );
    p.once('close', (code) => resolve({ code, out }));
    p.stdin.end(text);
  });
}
