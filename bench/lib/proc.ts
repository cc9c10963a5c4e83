// What several benches share: their child processes (killed at the end, with the work
// directory), CPU seconds read from /proc, a free loopback port, a sleep.
import { type ChildProcess, execFileSync } from 'node:child_process';
import { readdirSync, readFileSync, rmSync } from 'node:fs';
import net from 'node:net';

const HZ = Number(execFileSync('getconf', ['CLK_TCK'], { encoding: 'utf8' }).trim()) || 100;

/** The processes a bench started and its temporary directory, gone with `cleanUp()`. */
export class BenchProcs {
  private live = new Set<ChildProcess>();
  work = '';

  track(cp: ChildProcess): ChildProcess {
    this.live.add(cp);
    cp.on('exit', () => this.live.delete(cp));
    return cp;
  }

  cleanUp(): void {
    for (const cp of this.live) cp.kill('SIGKILL');
    this.live.clear();
    if (this.work) rmSync(this.work, { recursive: true, force: true });
    this.work = '';
  }
}

/** CPU seconds of a process, all threads: user + system (system alone with `sys`). */
export function procCpu(pid: number, sys = false): number {
  try {
    const s = readFileSync(`/proc/${pid}/stat`, 'utf8');
    const f = s.slice(s.lastIndexOf(')') + 2).split(' ');
    return ((sys ? 0 : Number(f[11])) + Number(f[12])) / HZ;
  } catch {
    return 0;
  }
}

/** CPU seconds per thread name of a process (main thread, V8 workers, libuv pool …). The main
 *  thread is keyed `main`: under Node 20 V8's worker threads (the optimising compiler,
 *  concurrent marking) and the module loader's thread carry its name, `node`, and were folded
 *  into it. */
export function threadCpu(pid: number): Map<string, number> {
  const m = new Map<string, number>();
  for (const tid of readdirSync(`/proc/${pid}/task`)) {
    try {
      const comm = readFileSync(`/proc/${pid}/task/${tid}/comm`, 'utf8').trim();
      const name = tid === String(pid) ? 'main' : comm;
      const st = readFileSync(`/proc/${pid}/task/${tid}/stat`, 'utf8');
      const f = st.slice(st.lastIndexOf(')') + 2).split(' ');
      m.set(name, (m.get(name) ?? 0) + (Number(f[11]) + Number(f[12])) / HZ);
    } catch {
      // the thread ended meanwhile
    }
  }
  return m;
}

/** SLUICE_BENCH_NODE_FLAGS: extra node/V8 flags for a bench's sluice child(ren), space-separated
 *  (e.g. `--cpu-prof --cpu-prof-dir=DIR`, `--log-code --logfile=FILE`). */
export const sluiceNodeFlags = (process.env['SLUICE_BENCH_NODE_FLAGS'] ?? '')
  .split(' ')
  .filter(Boolean);

export const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));

export function freePort(): Promise<number> {
  return new Promise((resolve) => {
    const s = net.createServer();
    s.listen(0, '127.0.0.1', () => {
      const p = (s.address() as net.AddressInfo).port;
      s.close(() => resolve(p));
    });
  });
}
