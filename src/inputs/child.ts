// A child process writing a transport stream to its stdout, restarted with backoff when it
// exits. Shared by the `std` input and the `test` generator. stderr goes to the log (the last
// lines are kept for the status); close() leaves no child behind.
import { type ChildProcess, spawn } from 'node:child_process';
import type { InputContext, InputTransport } from '../engine/input.ts';
import { Backoff } from './common.ts';

const KILL_GRACE_MS = 2000;
const STDERR_KEEP = 10;
/** A run that lasted this long resets the backoff. */
const STABLE_RUN_MS = 10_000;

export class ChildInput implements InputTransport {
  private child: ChildProcess | null = null;
  private backoff: Backoff;
  private closed = false;
  private starts = 0;
  private bytes = 0;
  private lastExit = '';
  private stderr: string[] = [];
  private startedAt = 0;
  /** Why the last spawn failed (ENOENT, EACCES …), kept over the 'close' that follows it. */
  private spawnError = '';

  /** `command`: the binary, or a function read at each start (a setting that may change).
   *  `opts.spawnError`: a failed start in the words of this kind of child (what to install). */
  constructor(
    private readonly command: string | (() => string),
    private readonly args: string[],
    private readonly env: Record<string, string>,
    private readonly ctx: InputContext,
    private readonly opts: { spawnError?: (err: Error, cmd: string) => string } = {},
  ) {
    this.backoff = new Backoff(ctx.clock);
  }

  /** The binary of the current (or last) start. */
  private cmd = '';

  get pid(): number | undefined {
    return this.child?.pid;
  }

  start(): void {
    if (this.closed) return;
    this.cmd = typeof this.command === 'string' ? this.command : this.command();
    const child = spawn(this.cmd, this.args, {
      env: { ...process.env, ...this.env },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    this.child = child;
    this.starts++;
    this.startedAt = this.ctx.clock.monotonic();
    this.spawnError = '';
    child.stdout!.on('data', (d: Buffer) => {
      this.bytes += d.length;
      this.delivering = true;
      this.ctx.onData(d);
    });
    let partial = '';
    child.stderr!.on('data', (d: Buffer) => {
      const lines = (partial + d.toString('utf8')).split('\n');
      partial = lines.pop() ?? '';
      for (const l of lines) {
        if (!l.trim()) continue;
        this.stderr.push(l);
        if (this.stderr.length > STDERR_KEEP) this.stderr.shift();
        this.ctx.log.info({ stderr: l, cmd: this.cmd }, 'input child stderr');
      }
    });
    child.on('error', (err) => {
      this.spawnError = (this.opts.spawnError ?? describeSpawnError)(err, this.cmd);
      this.lastExit = this.spawnError;
    });
    child.on('close', (code, signal) => {
      if (this.child !== child) return;
      this.child = null;
      this.delivering = false;
      this.lastExit =
        this.spawnError || (signal ? `killed by ${signal}` : `exited with code ${code}`);
      if (this.closed) return;
      if (this.ctx.clock.monotonic() - this.startedAt > STABLE_RUN_MS) this.backoff.reset();
      const d = this.backoff.schedule(() => this.start());
      this.ctx.log.warn(
        { cmd: this.cmd, exit: this.lastExit, retryMs: d },
        this.spawnError ? 'input child failed to start' : 'input child exited',
      );
    });
  }

  async close(): Promise<void> {
    this.closed = true;
    this.backoff.cancel();
    const child = this.child;
    this.child = null;
    if (!child || child.exitCode !== null || child.signalCode !== null) return;
    await new Promise<void>((resolve) => {
      // A real timer: the child must be killed even when a test drives a manual clock.
      const killer = setTimeout(() => child.kill('SIGKILL'), KILL_GRACE_MS);
      child.once('close', () => {
        clearTimeout(killer);
        resolve();
      });
      child.kill('SIGTERM');
    });
  }

  /** Set from the first bytes of a run until the child ends. */
  private delivering = false;

  fault(): string {
    return this.delivering ? '' : this.lastExit;
  }

  status(): Record<string, unknown> {
    return {
      pid: this.child?.pid ?? null,
      starts: this.starts,
      bytes: this.bytes,
      ...(this.lastExit ? { lastExit: this.lastExit } : {}),
      ...(this.stderr.length ? { stderr: [...this.stderr] } : {}),
    };
  }
}

/** A spawn failure in words an operator acts on (Node says only "spawn X EACCES"). */
function describeSpawnError(err: Error, cmd: string): string {
  const code = (err as NodeJS.ErrnoException).code;
  if (code === 'ENOENT') return `cannot run ${cmd}: no such file`;
  if (code === 'EACCES') return `cannot run ${cmd}: not executable (permission denied)`;
  return `cannot run ${cmd}: ${err.message}`;
}
