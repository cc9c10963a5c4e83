// The byte sources of an XMLTV import: a local regular file or an HTTP(S) download. Every wait
// for bytes is bounded in time (a stuck read fails the import instead of holding it), a download
// as a whole too, and close() releases the descriptor, the connection and the timers on every
// path, success or not.
import { constants, type Stats } from 'node:fs';
import { open } from 'node:fs/promises';
import { Readable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import { createBrotliDecompress, createGunzip, createInflate } from 'node:zlib';
import type { Clock } from '../util/clock.ts';
import { openWithDeadline } from '../util/outbound-request.ts';
import { ReadGuard } from '../util/read-guard.ts';

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
  const guard = new ReadGuard(
    clock,
    SOURCE_IDLE_MS,
    () => new Error(`no data for ${SOURCE_IDLE_MS / MS_PER_SECOND} s`),
    () => undefined,
  );
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

/** Decoders of a `Content-Encoding` the download asked for (`accept-encoding: gzip`) or a
 *  server sends anyway: the import sees the body as sent before that encoding, as it did when
 *  fetch decoded it. */
const DECODERS: Record<string, () => NodeJS.ReadWriteStream> = {
  gzip: createGunzip,
  'x-gzip': createGunzip,
  deflate: createInflate,
  br: createBrotliDecompress,
};

/** The chunks of a body through the decoder of its encoding; the decoder's and the download's
 *  failures both reach the reader. */
function decoded(chunks: AsyncIterable<Buffer>, encoding: string): AsyncIterable<Buffer> {
  const decoder = DECODERS[encoding]?.();
  if (!decoder) return chunks;
  pipeline(Readable.from(chunks), decoder).catch(() => undefined);
  return decoder as unknown as AsyncIterable<Buffer>;
}

/** Start a download: resolves once the headers of a 200 answer arrived. From then on the
 *  deadline `limitMs` and the idle limit bound the body, and either ends it with the connection
 *  closed. */
export async function openHttpSource(url: string, req: HttpRequest): Promise<SourceInput> {
  const fail = (err: unknown) => new Error(`download failed: ${(err as Error).message}`);
  const answer = await openWithDeadline(url, {
    headers: req.headers,
    deadlineMs: req.limitMs,
    idleMs: SOURCE_IDLE_MS,
    signal: req.signal,
    clock: req.clock,
  }).catch((err: unknown) => {
    throw fail(err);
  });
  if (answer.status !== 200) {
    answer.close();
    throw new Error(`download failed: HTTP ${answer.status} ${answer.statusText}`);
  }
  const encoding = String(answer.headers['content-encoding'] ?? '')
    .trim()
    .toLowerCase();
  const body = decoded(answer.chunks, encoding);
  async function* chunks(): AsyncGenerator<Buffer> {
    try {
      yield* body;
    } catch (err) {
      throw fail(err);
    } finally {
      answer.close();
    }
  }
  return { chunks: chunks(), close: async () => answer.close() };
}
