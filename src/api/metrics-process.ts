// /metrics of where the process spends CPU and keeps media: CPU seconds per thread name from
// /proc/self/task (Linux), and the bytes each stream's live segment stores hold.
import { readdirSync, readFileSync } from 'node:fs';
import { Counter, Gauge, type Registry } from 'prom-client';
import { streamRegistry } from '../drivers/stream/registry.ts';
import { streamMemoryBytes } from '../ott/held-bytes.ts';
import type { Services } from '../util/services.ts';

export { packagerBytes, storeBytes, streamMemoryBytes } from '../ott/held-bytes.ts';

const THREAD_CPU = 'sluice_thread_cpu_seconds_total';
const STREAM_MEMORY = 'sluice_stream_memory_bytes';
/** /proc counts CPU time in USER_HZ ticks, 100 a second on Linux whatever the kernel's HZ. */
const USER_HZ = 100;
/** Thread names beyond this many are summed as `other` (a series per name must stay few). */
const MAX_THREAD_NAMES = 48;
const TASK_DIR = '/proc/self/task';

/** One thread's name and CPU ticks (user + system), or undefined when it has just ended. */
function readTask(tid: string): { name: string; ticks: number } | undefined {
  try {
    const stat = readFileSync(`${TASK_DIR}/${tid}/stat`, 'latin1');
    // `pid (comm) state ...`: comm may hold spaces and parentheses, so split at the last ')'.
    const close = stat.lastIndexOf(')');
    const name = stat.slice(stat.indexOf('(') + 1, close);
    const fields = stat.slice(close + 2).split(' ');
    // Fields 14 and 15 of the line (utime, stime) are 11 and 12 after `state` (index 0).
    return { name, ticks: Number(fields[11]) + Number(fields[12]) };
  } catch {
    return undefined;
  }
}

/**
 * CPU ticks per thread name since the process started: the JS thread is `main`, others by
 * their name (`sluice-udp`, `libuv-worker`, V8's `V8 DefaultWorke`…), threads of one name
 * summed. A thread that ended keeps what it used (its last reading), so the sum never falls.
 */
export class ThreadCpu {
  private live = new Map<string, { name: string; ticks: number }>();
  private ended = new Map<string, number>();
  private names = new Set<string>();

  constructor(
    private readonly pid = process.pid,
    private readonly tasks = () => readdirSync(TASK_DIR),
    private readonly read = readTask,
  ) {}

  /** Seconds of CPU by thread name. */
  sample(): Map<string, number> {
    const seen = new Map<string, { name: string; ticks: number }>();
    for (const tid of this.tasks()) {
      const t = this.read(tid);
      if (!t) continue;
      seen.set(tid, {
        name: tid === String(this.pid) ? 'main' : this.bounded(t.name),
        ticks: t.ticks,
      });
    }
    for (const [tid, t] of this.live) {
      if (!seen.has(tid)) this.ended.set(t.name, (this.ended.get(t.name) ?? 0) + t.ticks);
    }
    this.live = seen;
    const out = new Map<string, number>();
    for (const [name, ticks] of this.ended) out.set(name, ticks);
    for (const t of seen.values()) out.set(t.name, (out.get(t.name) ?? 0) + t.ticks);
    for (const [name, ticks] of out) out.set(name, ticks / USER_HZ);
    return out;
  }

  private bounded(name: string): string {
    if (this.names.has(name)) return name;
    if (this.names.size >= MAX_THREAD_NAMES) return 'other';
    this.names.add(name);
    return name;
  }
}

export function installProcessMetrics(registry: Registry, services: Services): void {
  if (registry.getSingleMetric(THREAD_CPU)) return;
  const cpu = new ThreadCpu();
  new Counter({
    name: THREAD_CPU,
    help: 'CPU seconds (user and system) used by the threads of each name; main is the JavaScript thread',
    labelNames: ['thread'],
    registers: [registry],
    collect() {
      // /proc is Linux's; elsewhere the metric stays empty.
      let byName: Map<string, number>;
      try {
        byName = cpu.sample();
      } catch {
        return;
      }
      this.reset();
      for (const [thread, s] of byName) this.inc({ thread }, s);
    },
  });
  new Gauge({
    name: STREAM_MEMORY,
    help: "Bytes of media the stream's live segment stores hold (segments in the window and grace, the open segment, init)",
    labelNames: ['stream'],
    registers: [registry],
    collect() {
      this.reset();
      for (const s of streamRegistry(services).all())
        this.set({ stream: s.name }, s.memoryBytes?.() ?? streamMemoryBytes(services, s.name));
    },
  });
}
