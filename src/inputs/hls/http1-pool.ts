// Plain http:// GETs of the hls input over kept-alive TCP connections of its own (the HTTP/1.1
// framing is src/protocols/http1.ts): heads and bodies of unannounced length are read into one
// shared buffer, and a body is copied from it into memory the caller may hand back for the next
// body (BodyBuffers); once a Content-Length body has begun, the socket reads straight into the
// rest of its memory (as many bytes a read as the kernel holds, up to what is left, no copy).
// Node's http client allocates a new ArrayBuffer for every socket read and a body is
// concatenated once more; at 32 pulls of 2 Mbit/s that external memory made V8 run a major
// collection about every second (bench/RESULTS.md, hls-pull).
import net from 'node:net';
import { getRequest, type ResponseHead, ResponseReader } from '../../protocols/http1.ts';
import { type BodyBuffers, type BodyRefusal, IncomingBody, refusalWords } from './body-buffers.ts';
import type { Deadline } from './deadline.ts';

/** Every connection reads into this one buffer: reads are handled one at a time on the main
 *  thread, and everything kept from it is copied. */
const READ_BUFFER = Buffer.allocUnsafe(64 * 1024);

export interface Http1Request {
  /** Host name or address to connect to (IPv6 without brackets). */
  host: string;
  port: number;
  /** The Host header: the URL's host as written (brackets and a port other than 80 kept). */
  authority: string;
  /** The request target (path and query) as it goes on the request line. */
  target: string;
  headers: [string, string][];
  timeoutMs: number;
  /** A 200/206 body longer than this is refused (`refusal`). */
  maxBytes: number;
  signal?: AbortSignal;
  /** Ends the exchange under way when it passes (code DEADLINE). */
  deadline?: Deadline;
  /** Where a 200/206 body is put (else a Buffer of its own); a refused body's memory goes. */
  bodies?: BodyBuffers;
}

export interface Http1Answer {
  status: number;
  headers: Map<string, string>;
  /** Empty for statuses other than 200 and 206 (their bodies are read and dropped). */
  body: Buffer;
}

/** How a request failed, for the client to put in words. */
export class Http1Failure extends Error {
  constructor(
    message: string,
    readonly code: string,
    /** The body was refused: over `maxBytes`, or no room in `bodies`. */
    readonly refusal: BodyRefusal | null = null,
  ) {
    super(message);
  }
}

/** One request on one connection. */
class Exchange {
  head: ResponseHead | null = null;
  /** The 200/206 body under way. */
  body: IncomingBody | null = null;
  settled = false;

  constructor(
    readonly req: Http1Request,
    readonly resolve: (a: Http1Answer) => void,
    readonly reject: (e: Http1Failure) => void,
  ) {}
}

class Connection {
  readonly socket: net.Socket;
  private readonly reader: ResponseReader;
  private ex: Exchange | null = null;
  private alive = true;
  /** Requests answered on this connection (a failure on a reused one is retried). */
  served = 0;

  constructor(
    readonly key: string,
    host: string,
    port: number,
    private readonly idle: (c: Connection) => void,
    private readonly gone: (c: Connection) => void,
  ) {
    this.reader = new ResponseReader({
      head: (h) => this.onHead(h),
      body: (b) => this.onBody(b),
      end: () => this.onEnd(),
    });
    this.socket = net.connect({
      host,
      port,
      onread: { buffer: () => this.readBuffer(), callback: (n, b) => this.onRead(n, b) },
    });
    this.socket.setNoDelay(true);
    this.socket.on('error', (err: NodeJS.ErrnoException) => {
      this.fail(new Http1Failure(err.message, err.code ?? 'ERR'));
    });
    this.socket.on('end', () => {
      try {
        if (this.ex) this.reader.eof();
        this.fail(new Http1Failure('origin closed the connection', 'ECONNRESET'));
      } catch (err) {
        this.fail(new Http1Failure((err as Error).message, 'EARLY_CLOSE'));
      }
    });
    this.socket.on('close', () => this.fail(new Http1Failure('socket hang up', 'ECONNRESET')));
    this.socket.on('timeout', () => {
      const s = (this.ex?.req.timeoutMs ?? 0) / 1000;
      this.fail(new Http1Failure(`no answer from origin in ${s} s`, 'TIMEOUT'));
    });
  }

  get usable(): boolean {
    return this.alive && this.ex === null;
  }

  run(ex: Exchange): void {
    this.ex = ex;
    this.reader.reset();
    const { req } = ex;
    this.socket.setTimeout(req.timeoutMs);
    try {
      this.socket.write(getRequest(req.target, req.authority, req.headers), 'latin1');
    } catch (err) {
      this.fail(new Http1Failure((err as Error).message, 'BAD_REQUEST'));
    }
  }

  /** Whether a failure of the current request may be retried on a new connection: this one was
   *  reused and the origin had not begun to answer (it closed the idle connection). */
  get retryable(): boolean {
    return this.served > 0 && !this.reader.started;
  }

  /** Whether the origin has begun to answer the request under way. */
  get answering(): boolean {
    return this.reader.started;
  }

  abort(err: Http1Failure): void {
    this.fail(err);
  }

  /** Where the socket's next read goes (asked after every read): the rest of the body's memory
   *  while a Content-Length body is under way, exactly what is left of it (a read never takes
   *  bytes past the answer); else the shared buffer. A failed exchange lets its body go and
   *  destroys the socket in the same call, so no read lands in memory that is no longer ours. */
  private readBuffer(): Buffer {
    const body = this.ex?.body;
    const left = this.reader.bodyLeft;
    if (body?.buf && left > 0 && body.got + left <= body.buf.length) {
      return body.buf.subarray(body.got, body.got + left);
    }
    return READ_BUFFER;
  }

  private onRead(n: number, into: Uint8Array): boolean {
    if (!this.ex) {
      // Bytes nobody asked for: the connection is out of step.
      this.fail(new Http1Failure('origin sent bytes between answers', 'PROTOCOL'));
      return true;
    }
    if (into !== READ_BUFFER) {
      this.ex.body!.got += n; // read in place (readBuffer)
      try {
        this.reader.bodyRead(n);
      } catch (err) {
        this.fail(new Http1Failure(`origin: ${(err as Error).message}`, 'PROTOCOL'));
      }
      return true;
    }
    try {
      const b = READ_BUFFER.subarray(0, n);
      const taken = this.reader.feed(b);
      if (taken < n && this.alive) {
        throw new Error('origin sent bytes after its answer');
      }
    } catch (err) {
      this.fail(new Http1Failure(`origin: ${(err as Error).message}`, 'PROTOCOL'));
    }
    return true;
  }

  private onHead(h: ResponseHead): void {
    const ex = this.ex!;
    ex.head = h;
    if (h.status !== 200 && h.status !== 206) return;
    const cl = h.headers.get('content-length');
    ex.body = new IncomingBody(ex.req.bodies, ex.req.maxBytes);
    this.refuse(ex.body.begin(cl === undefined ? -1 : Number(cl)));
  }

  /** A refused body fails the exchange (its memory already let go). */
  private refuse(r: BodyRefusal | null): void {
    if (!r) return;
    const why = refusalWords(r);
    this.fail(new Http1Failure(why, r.kind === 'cap' ? 'TOO_BIG' : 'NO_ROOM', r));
    throw new Error(why); // stops the reader
  }

  private onBody(chunk: Buffer): void {
    const body = this.ex?.body;
    if (!body) return; // another status: dropped
    this.refuse(body.append(chunk));
  }

  private onEnd(): void {
    const ex = this.ex!;
    this.ex = null;
    this.served++;
    this.socket.setTimeout(0);
    ex.settled = true;
    const h = ex.head!;
    ex.resolve({
      status: h.status,
      headers: h.headers,
      body: ex.body ? ex.body.result() : Buffer.alloc(0),
    });
    if (this.reader.reusable) this.idle(this);
    else this.close();
  }

  private fail(err: Http1Failure): void {
    const ex = this.ex;
    this.ex = null;
    if (ex && !ex.settled) {
      ex.settled = true;
      ex.body?.release();
      ex.reject(err);
    }
    this.close();
  }

  close(): void {
    if (!this.alive) return;
    this.alive = false;
    this.socket.destroy();
    this.gone(this);
  }
}

/** Kept-alive connections by origin (host:port), at most `maxIdle` idle per origin. */
export class Http1Pool {
  private readonly idle = new Map<string, Connection[]>();
  private readonly all = new Set<Connection>();

  constructor(private readonly maxIdle: number) {}

  async request(req: Http1Request): Promise<Http1Answer> {
    try {
      return await this.once(req, true);
    } catch (err) {
      if (err instanceof RetryOnNew) return this.once(req, false);
      throw err;
    }
  }

  private once(req: Http1Request, reuse: boolean): Promise<Http1Answer> {
    return new Promise((resolve, reject) => {
      if (req.signal?.aborted) return reject(new Http1Failure('aborted', 'ABORTED'));
      const key = `${req.host}:${req.port}`;
      const conn = (reuse && this.takeIdle(key)) || this.open(key, req);
      const onAbort = () => conn.abort(new Http1Failure('aborted', 'ABORTED'));
      req.signal?.addEventListener('abort', onAbort, { once: true });
      const deadline = req.deadline;
      deadline?.watch(() =>
        conn.abort(new Http1Failure(deadline.words(conn.answering), 'DEADLINE')),
      );
      const done = () => {
        req.signal?.removeEventListener('abort', onAbort);
        req.deadline?.unwatch();
      };
      conn.run(
        new Exchange(
          req,
          (a) => {
            done();
            resolve(a);
          },
          (e) => {
            done();
            reject(conn.retryable && e.code !== 'ABORTED' ? new RetryOnNew() : e);
          },
        ),
      );
    });
  }

  private takeIdle(key: string): Connection | null {
    const list = this.idle.get(key);
    while (list?.length) {
      const c = list.pop()!;
      if (c.usable) return c;
    }
    return null;
  }

  private open(key: string, req: Http1Request): Connection {
    const c = new Connection(
      key,
      req.host,
      req.port,
      (idle) => {
        let list = this.idle.get(idle.key);
        if (!list) {
          list = [];
          this.idle.set(idle.key, list);
        }
        if (list.length >= this.maxIdle) idle.close();
        else list.push(idle);
      },
      (gone) => {
        this.all.delete(gone);
        const list = this.idle.get(gone.key);
        const i = list?.indexOf(gone) ?? -1;
        if (i >= 0) list!.splice(i, 1);
      },
    );
    this.all.add(c);
    return c;
  }

  close(): void {
    for (const c of [...this.all]) c.abort(new Http1Failure('client closed', 'ABORTED'));
    this.idle.clear();
  }
}

/** A kept-alive connection the origin had closed: the request goes again on a new one. */
class RetryOnNew extends Error {}
