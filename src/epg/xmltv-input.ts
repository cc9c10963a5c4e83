// The byte sources of an XMLTV import: a local regular file or an HTTP(S) download. Every wait
// for bytes is bounded in time (a stuck read fails the import instead of holding it), and
// close() releases the descriptor, the request and the timers on every path, success or not.
import { constants, type Stats } from 'node:fs';
import { open } from 'node:fs/promises';
import { Readable } from 'node:stream';
import type { ReadableStream } from 'node:stream/web';
import type { Clock, Timer } from '../util/clock.ts';

const MS_PER_SECOND = 1000;
/** Give up when no byte arrived for this long (a download before its headers or mid-body, a
 *  file read, a file open). */
export const SOURCE_IDLE_MS = 60_000;
/** Abort a download still running after its source's update interval, but never sooner than
 *  this (a large guide over a slow link): a server that trickles bytes slower than the idle
 *  limit would otherwise hold the import, and the previous data, forever. */
export const DOWNLOAD_MIN_LIMIT_S = 600;
/** O_NONBLOCK: opening a FIFO without a writer returns at once instead of blocking a thread of
 *  the shared libuv pool until a writer comes (which stalls every fs call of the server once
 *  the pool's four threads are taken). No effect on reads of a regular file. */
const OPEN_FLAGS = constants.O_RDONLY | constants.O_NONBLOCK | constants.O_NOCTTY;

/** How long a download of a source with this `update-interval` may take, in ms. */
export function downloadLimitMs(updateInterval: number): number {
  return Math.max(updateInterval, DOWNLOAD_MIN_LIMIT_S) * MS_PER_SECOND;
}

export interface SourceInput {
  chunks: AsyncIterable<Buffer>;
  /** Release the descriptor or request and the timers. Idempotent; resolves once a file's
   *  descriptor is closed. */
  close(): Promise<void>;
}

/** Trips once with the first cause (idle, overall limit, abort); a read waiting in `next` then
 *  rejects at once with that cause, without waiting for the read itself to come back. */
class ReadGuard {
  private failed: Error | undefined;
  private reject: ((err: Error) => void) | undefined;
  private idle: Timer | undefined;
  private overall: Timer | undefined;

  constructor(
    private clock: Clock,
    private idleMs: number,
    private onTrip: (err: Error) => void,
  ) {}

  /** Trip with this error after `ms` unless stopped. */
  limit(ms: number, err: () => Error): void {
    this.overall = this.clock.setTimeout(() => this.trip(err()), ms);
  }

  watch(signal: AbortSignal, err: () => Error): void {
    if (signal.aborted) this.trip(err());
    else signal.addEventListener('abort', () => this.trip(err()), { once: true });
  }

  trip(err: Error): void {
    if (this.failed) return;
    this.failed = err;
    this.stop();
    this.reject?.(err);
    this.onTrip(err);
  }

  /** Wait for `p`, at most the idle limit. */
  async next<T>(p: Promise<T>): Promise<T> {
    if (this.failed) {
      p.catch(() => undefined);
      throw this.failed;
    }
    this.idle = this.clock.setTimeout(
      () => this.trip(new Error(`no data for ${this.idleMs / MS_PER_SECOND} s`)),
      this.idleMs,
    );
    try {
      return await new Promise<T>((ok, fail) => {
        this.reject = fail;
        p.then(ok, fail);
      });
    } finally {
      this.reject = undefined;
      this.idle?.cancel();
      this.idle = undefined;
    }
  }

  stop(): void {
    this.idle?.cancel();
    this.overall?.cancel();
  }
}

/** The chunks of `stream`, each read bounded by `guard`; errors pass through `wrap`. The stream
 *  is destroyed when the iteration ends for any reason (the consumer's return() included). */
async function* guardedChunks(
  stream: Readable,
  guard: ReadGuard,
  wrap: (err: unknown) => Error,
): AsyncGenerator<Buffer> {
  const it = stream[Symbol.asyncIterator]();
  try {
    for (;;) {
      const n = await guard.next(it.next() as Promise<IteratorResult<Buffer>>);
      if (n.done) return;
      yield Buffer.isBuffer(n.value) ? n.value : Buffer.from(n.value);
    }
  } catch (err) {
    throw wrap(err);
  } finally {
    guard.stop();
    stream.destroy();
  }
}

function fileKind(st: Stats): string {
  if (st.isFIFO()) return 'a FIFO';
  if (st.isDirectory()) return 'a directory';
  if (st.isCharacterDevice()) return 'a character device';
  if (st.isBlockDevice()) return 'a block device';
  if (st.isSocket()) return 'a socket';
  return 'not a regular file';
}

/** Open a local file for import. Only a regular file is read: a FIFO, a device or a directory is
 *  refused at once (a read from one can block a pool thread for good, or never end). */
export async function openFileSource(
  path: string,
  clock: Clock,
  signal: AbortSignal,
): Promise<SourceInput> {
  const guard = new ReadGuard(clock, SOURCE_IDLE_MS, () => undefined);
  guard.watch(signal, () => new Error('import stopped'));
  const opening = open(path, OPEN_FLAGS);
  const fh = await guard.next(opening).catch((err: NodeJS.ErrnoException) => {
    // A late open after a time-out still gets its descriptor closed.
    opening.then((late) => late.close()).catch(() => undefined);
    guard.stop();
    // open(2) of a UNIX socket fails with ENXIO, which says nothing to an operator.
    if (err.code === 'ENXIO') throw new Error(`${path} is a socket, not a regular file`);
    throw err.code ? err : new Error(`${path}: ${err.message}`);
  });
  let st: Stats;
  try {
    st = await fh.stat();
  } catch (err) {
    guard.stop();
    await fh.close();
    throw err;
  }
  if (!st.isFile()) {
    guard.stop();
    await fh.close();
    const kind = fileKind(st);
    throw new Error(
      kind.startsWith('not ') ? `${path} is ${kind}` : `${path} is ${kind}, not a regular file`,
    );
  }
  const stream = fh.createReadStream();
  const closed = new Promise<void>((ok) => stream.once('close', () => ok()));
  // Errors reach the reader through the iterator; this only keeps a late one from being unhandled.
  stream.on('error', () => undefined);
  const input = guardedChunks(stream, guard, (err) =>
    err instanceof Error && /^no data for/.test(err.message)
      ? new Error(`${path}: ${err.message}`)
      : (err as Error),
  );
  return {
    chunks: input,
    async close() {
      guard.stop();
      stream.destroy();
      await closed;
    },
  };
}

export interface HttpRequest {
  headers: Record<string, string>;
  clock: Clock;
  signal: AbortSignal;
  /** The whole download must end within this (ms). */
  limitMs: number;
}

/** Start a download: resolves once the headers of a 200 answer arrived. */
export async function openHttpSource(url: string, req: HttpRequest): Promise<SourceInput> {
  const ctl = new AbortController();
  let body: Readable | undefined;
  // Whatever stops the download also drops the request: the socket never outlives it.
  const guard = new ReadGuard(req.clock, SOURCE_IDLE_MS, (err) => {
    ctl.abort(err);
    body?.destroy();
  });
  guard.limit(req.limitMs, () => new Error(`not complete after ${req.limitMs / MS_PER_SECOND} s`));
  guard.watch(req.signal, () => new Error('import stopped'));
  const release = async () => {
    guard.stop();
    if (!ctl.signal.aborted) ctl.abort(new Error('download closed'));
    body?.destroy();
  };
  let res: Response;
  try {
    res = await guard.next(
      fetch(url, { headers: req.headers, signal: ctl.signal, redirect: 'follow' }),
    );
  } catch (err) {
    await release();
    throw new Error(`download failed: ${fetchErrorText(err)}`);
  }
  if (res.status !== 200 || !res.body) {
    await res.body?.cancel().catch(() => undefined);
    await release();
    throw new Error(`download failed: HTTP ${res.status} ${res.statusText}`);
  }
  body = Readable.fromWeb(res.body as ReadableStream);
  body.on('error', () => undefined);
  const chunks = guardedChunks(body, guard, (err) => {
    const text = fetchErrorText(err);
    return new Error(text.startsWith('download failed: ') ? text : `download failed: ${text}`);
  });
  return { chunks, close: release };
}

/** undici says only "fetch failed"; the reason (ECONNREFUSED, ENOTFOUND, a redirect loop, a
 *  TLS problem) is in `cause`, and the operator needs it in the source status. */
export function fetchErrorText(err: unknown): string {
  const e = err as Error & { cause?: unknown };
  const cause = e?.cause as (Error & { code?: string }) | undefined;
  if (cause && typeof cause.message === 'string' && cause.message) {
    const text = cause.message;
    return cause.code && !text.includes(cause.code) ? `${cause.code}: ${text}` : text;
  }
  return e instanceof Error ? e.message : String(err);
}
