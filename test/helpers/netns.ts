// Running a test scenario inside a network namespace of its own, where loopback carries
// multicast (the host's `lo` has no MULTICAST flag, so librist's multicast peers, which pick
// the interface by name, send and receive nothing there). `unshare --net` makes the namespace;
// it lives as long as the child and takes nothing from the host's network.
import { spawn } from 'node:child_process';
import { REPO_ROOT } from './server.ts';

/** Run `script` (a TypeScript file) with node in a fresh network namespace whose loopback is up
 *  with multicast on and 224.0.0.0/4 routed to it; resolves with the JSON the script prints as
 *  its last line of stdout. */
export function inMulticastNetns<T>(script: string, args: string[], timeoutMs: number): Promise<T> {
  const setup =
    'ip link set lo up && ip link set lo multicast on && ip route add 224.0.0.0/4 dev lo && exec "$@"';
  const p = spawn(
    'unshare',
    ['--net', 'bash', '-c', setup, 'netns', process.execPath, '--import', 'tsx', script, ...args],
    { stdio: ['ignore', 'pipe', 'pipe'], cwd: REPO_ROOT },
  );
  let out = '';
  let err = '';
  p.stdout.on('data', (d: Buffer) => (out += d.toString()));
  p.stderr.on('data', (d: Buffer) => (err += d.toString()));
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => {
      p.kill('SIGKILL');
      reject(
        new Error(`${script} in a network namespace: timed out after ${timeoutMs} ms\n${err}`),
      );
    }, timeoutMs);
    p.on('close', (code) => {
      clearTimeout(timer);
      const last = out.trim().split('\n').pop() ?? '';
      if (code !== 0) {
        reject(new Error(`${script} in a network namespace exited ${code}:\n${err}${out}`));
        return;
      }
      try {
        resolve(JSON.parse(last) as T);
      } catch {
        reject(new Error(`${script}: no JSON result:\n${out}${err}`));
      }
    });
  });
}
