// `pipe` input: reads a named pipe (FIFO). With `file-name` empty a FIFO is created under the
// data directory (`fifo/<stream>-<n>.ts`) and removed on close. The FIFO is opened read-write
// and non-blocking, so opening never waits for a writer and a writer leaving is not an EOF:
// writers may come and go and reading simply continues (the "reopen on EOF" of the issue).
import { execFileSync } from 'node:child_process';
import { constants, mkdirSync, openSync, statSync, unlinkSync } from 'node:fs';
import net from 'node:net';
import { join } from 'node:path';
import { str } from '../../config/spec-values.ts';
import type { InputContext, InputTransport } from '../../engine/input.ts';

export class PipeInput implements InputTransport {
  private sock: net.Socket | null = null;
  private path = '';
  private created = false;
  private bytes = 0;
  private lastError = '';

  constructor(
    private readonly cfg: Record<string, unknown>,
    private readonly ctx: InputContext,
  ) {}

  start(): void {
    const given = str(this.cfg, 'file-name');
    if (given) {
      if (!given.startsWith('/'))
        throw new Error(`pipe input: file-name must be absolute: ${given}`);
      if (!statSync(given).isFIFO()) throw new Error(`pipe input: ${given} is not a named pipe`);
      this.path = given;
    } else {
      const dir = join(this.ctx.dataDir, 'fifo');
      mkdirSync(dir, { recursive: true });
      const safe = this.ctx.streamName.replace(/[^A-Za-z0-9._-]/g, '_');
      this.path = join(dir, `${safe}-${this.ctx.index}.ts`);
      try {
        unlinkSync(this.path); // a leftover from a crash
      } catch {
        // none
      }
      // mkfifo(3) is not in Node's fs; the coreutils program takes the path as argv, no shell.
      execFileSync('mkfifo', ['-m', '0600', this.path]);
      this.created = true;
    }
    const fd = openSync(this.path, constants.O_RDWR | constants.O_NONBLOCK);
    const sock = new net.Socket({ fd, readable: true, writable: false });
    this.sock = sock;
    sock.on('data', (d: Buffer) => {
      this.bytes += d.length;
      this.ctx.onData(d);
    });
    sock.on('error', (err) => {
      this.lastError = err.message;
      this.ctx.log.warn({ err }, 'pipe input error');
    });
  }

  async close(): Promise<void> {
    const s = this.sock;
    this.sock = null;
    if (s && !s.destroyed) {
      await new Promise<void>((resolve) => {
        s.once('close', () => resolve());
        s.destroy();
      });
    }
    if (this.created) {
      this.created = false;
      try {
        unlinkSync(this.path);
      } catch {
        // already gone
      }
    }
  }

  status(): Record<string, unknown> {
    return {
      path: this.path,
      bytes: this.bytes,
      ...(this.lastError ? { lastError: this.lastError } : {}),
    };
  }
}
