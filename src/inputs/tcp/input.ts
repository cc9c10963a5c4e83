// `tcp` input: a TCP client reading a raw transport stream. Reconnects with backoff; a
// connection silent for `client-timeout` seconds (or that cannot connect in that time) is dropped.
import net from 'node:net';
import { num, str } from '../../config/spec-values.ts';
import type { InputContext, InputTransport } from '../../engine/input.ts';
import { Backoff, unreachable } from '../common.ts';

export class TcpInput implements InputTransport {
  private sock: net.Socket | null = null;
  private backoff: Backoff;
  private closed = false;
  private connected = false;
  private connects = 0;
  private bytes = 0;
  private lastError = '';

  constructor(
    private readonly cfg: Record<string, unknown>,
    private readonly ctx: InputContext,
  ) {
    this.backoff = new Backoff(ctx.clock);
  }

  start(): void {
    const port = num(this.cfg, 'port', 0);
    if (port < 1) throw new Error('tcp input: port is not set');
    this.connect();
  }

  private connect(): void {
    if (this.closed) return;
    const host = str(this.cfg, 'address') || '127.0.0.1';
    const port = num(this.cfg, 'port', 0);
    const timeoutMs = num(this.cfg, 'client-timeout', 10) * 1000;
    const sock = net.connect({ host, port });
    this.sock = sock;
    sock.setTimeout(timeoutMs);
    sock.on('end', () => {
      this.lastError = 'closed by the server';
    });
    sock.on('connect', () => {
      this.connected = true;
      this.connects++;
      this.ctx.log.info({ host, port }, 'tcp input connected');
    });
    sock.on('data', (d: Buffer) => {
      this.bytes += d.length;
      this.backoff.reset();
      this.ctx.onData(d);
    });
    sock.on('timeout', () => {
      this.lastError = `no data for ${timeoutMs / 1000} s`;
      sock.destroy();
    });
    sock.on('error', (err) => {
      this.lastError = unreachable(err, `tcp://${host}:${port}`) ?? err.message;
    });
    sock.on('close', () => {
      this.connected = false;
      if (this.sock !== sock || this.closed) return;
      this.sock = null;
      const d = this.backoff.schedule(() => this.connect());
      this.ctx.log.info(
        { host, port, retryMs: d, reason: this.lastError },
        'tcp input reconnecting',
      );
    });
  }

  async close(): Promise<void> {
    this.closed = true;
    this.backoff.cancel();
    const s = this.sock;
    this.sock = null;
    if (!s) return;
    await new Promise<void>((resolve) => {
      if (s.destroyed) return resolve();
      s.once('close', () => resolve());
      s.destroy();
    });
  }

  fault(): string {
    return this.connected ? '' : this.lastError;
  }

  status(): Record<string, unknown> {
    return {
      connected: this.connected,
      connects: this.connects,
      bytes: this.bytes,
      ...(this.lastError ? { lastError: this.lastError } : {}),
    };
  }
}
