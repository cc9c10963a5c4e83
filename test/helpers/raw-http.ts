// A raw HTTP/1.1 keep-alive client on one loopback socket: the bytes go out exactly as given,
// responses (Content-Length framed) are read back in order. For tests that must control the
// connection itself (pipelining, split requests, which side answers).
import { connect, type Socket } from 'node:net';

export interface Response {
  status: number;
  headers: Map<string, string>;
  /** Header names in the order sent. */
  names: string[];
  body: Buffer;
}

/** A raw keep-alive client: writes bytes, reads Content-Length-framed responses in order. */
export class RawClient {
  private buf = Buffer.alloc(0);
  private waiters: (() => void)[] = [];
  ended = false;

  private constructor(readonly socket: Socket) {
    socket.on('data', (d) => {
      this.buf = Buffer.concat([this.buf, d]);
      this.wake();
    });
    socket.on('end', () => {
      this.ended = true;
      this.wake();
    });
    socket.on('error', () => {
      this.ended = true;
      this.wake();
    });
  }

  /** `localAddress`: the client's own address (e.g. 127.0.0.2, which is not anonymous). */
  static open(port: number, localAddress?: string): Promise<RawClient> {
    return new Promise((resolve, reject) => {
      const s = connect(
        { port, host: '127.0.0.1', ...(localAddress ? { localAddress } : {}) },
        () => resolve(new RawClient(s)),
      );
      s.once('error', reject);
    });
  }

  send(text: string | Buffer): void {
    this.socket.write(text);
  }

  private wake(): void {
    for (const w of this.waiters.splice(0)) w();
  }

  private changed(): Promise<void> {
    return new Promise((resolve) => this.waiters.push(resolve));
  }

  /** The next whole response (`head` true: a response to HEAD, no body). */
  async next(head = false): Promise<Response> {
    for (;;) {
      const end = this.buf.indexOf('\r\n\r\n');
      if (end >= 0) {
        const lines = this.buf.subarray(0, end).toString('latin1').split('\r\n');
        const status = Number(lines[0]!.split(' ')[1]);
        const headers = new Map<string, string>();
        const names: string[] = [];
        for (const l of lines.slice(1)) {
          const i = l.indexOf(':');
          names.push(l.slice(0, i));
          headers.set(l.slice(0, i).toLowerCase(), l.slice(i + 1).trim());
        }
        const length = head ? 0 : Number(headers.get('content-length') ?? 0);
        if (this.buf.length >= end + 4 + length) {
          const body = this.buf.subarray(end + 4, end + 4 + length);
          this.buf = this.buf.subarray(end + 4 + length);
          return { status, headers, names, body: Buffer.from(body) };
        }
      }
      if (this.ended) throw new Error(`connection ended (${this.buf.length} bytes unread)`);
      await this.changed();
    }
  }

  /** Resolves when the server closes the connection. */
  async closed(): Promise<void> {
    while (!this.ended) await this.changed();
  }

  close(): void {
    this.socket.destroy();
  }
}
