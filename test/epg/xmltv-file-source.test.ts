// File sources of the XMLTV import: a file that fails mid-parse leaves no descriptor open
// (counted in /proc/self/fd over repeated tries); a FIFO without a writer, a directory or a
// device is refused at once with a message saying what it is, and never takes a thread of the
// shared libuv pool (a concurrent fs call still answers while every source points at a FIFO).
import { execFileSync } from 'node:child_process';
import { closeSync, constants, mkdirSync, openSync, readdirSync, writeFileSync } from 'node:fs';
import { stat } from 'node:fs/promises';
import { join } from 'node:path';
import t from 'tap';
import type { EpgSourceApplied } from '../../src/config/spec-types.generated.ts';
import { XmltvSource } from '../../src/epg/xmltv-source.ts';
import { silentLogger } from '../../src/log.ts';
import { epgTestBed, sourceRecord } from '../helpers/epg-host.ts';

/** A refused source must fail within this (it used to hang for good). */
const REFUSED_WITHIN_MS = 5000;
/** A concurrent fs call must answer within this while the sources are refused. */
const FS_ANSWERS_WITHIN_MS = 2000;
const TRIES = 10;

function spec(id: number, source: string): EpgSourceApplied {
  return sourceRecord({ id, name: `src${id}`, source, enable: true });
}

function openFds(): number {
  return readdirSync('/proc/self/fd').length;
}

/** `p`, or a rejection naming `what` after `ms` (the test fails instead of hanging). */
async function within<T>(p: Promise<T>, ms: number, what: string): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const late = new Promise<never>((_, fail) => {
    timer = setTimeout(() => fail(new Error(`${what}: not within ${ms} ms`)), ms);
  });
  try {
    return await Promise.race([p, late]);
  } finally {
    clearTimeout(timer);
  }
}

t.test('a file failing mid-parse leaves no descriptor open', async (t) => {
  const bed = epgTestBed(t);
  const path = join(bed.dir, 'broken.xml');
  // Malformed at once, then 1 MB more: the reader is far from the end when parsing fails.
  writeFileSync(path, `<tv><channel id="x"></tv>${' '.repeat(1024 * 1024)}`);
  const src = new XmltvSource(bed.rt, spec(1, path), silentLogger);
  t.teardown(() => src.close());
  await src.idle();
  t.match(src.status().lastError, /parse error/);
  const before = openFds();
  for (let i = 0; i < TRIES; i++) {
    src.refresh('forced');
    await src.idle();
    t.match(src.status().lastError, /parse error/);
  }
  t.equal(openFds(), before, `descriptors before and after ${TRIES} failed imports`);
});

t.test('a FIFO without a writer is refused at once; the thread pool stays free', async (t) => {
  const bed = epgTestBed(t);
  // As many FIFO sources as the pool has threads: each blocking open() would take one.
  const pool = Number(process.env['UV_THREADPOOL_SIZE'] ?? 4);
  const fifos = Array.from({ length: pool }, (_, i) => join(bed.dir, `guide-${i}.fifo`));
  for (const f of fifos) execFileSync('mkfifo', [f]);
  const srcs = fifos.map((f, i) => new XmltvSource(bed.rt, spec(i + 1, f), silentLogger));
  for (const s of srcs) t.teardown(() => s.close());
  // Runs first (teardowns run last-in first-out): a writer releases a reader stuck in open().
  t.teardown(() => {
    for (const f of fifos) {
      try {
        closeSync(openSync(f, constants.O_WRONLY | constants.O_NONBLOCK));
      } catch {
        // ENXIO: no reader waiting, nothing to release
      }
    }
  });
  // Every source has asked the pool for its open() by now (a stream opens on a later tick).
  await new Promise((r) => setImmediate(r));
  const st = await within(stat(bed.dir), FS_ANSWERS_WITHIN_MS, 'a concurrent stat');
  t.ok(st.isDirectory(), 'a concurrent fs call answered');
  await within(
    Promise.all(srcs.map((s) => s.idle())),
    REFUSED_WITHIN_MS,
    'the FIFO imports failing',
  );
  srcs.forEach((s, i) => {
    t.equal(s.status().state, 'error');
    t.equal(s.status().lastError, `${fifos[i]} is a FIFO, not a regular file`);
  });
});

t.test('a directory or a device is refused with what it is', async (t) => {
  const bed = epgTestBed(t);
  const dir = join(bed.dir, 'a-dir');
  mkdirSync(dir);
  const cases: [string, string][] = [
    [dir, `${dir} is a directory, not a regular file`],
    ['/dev/zero', '/dev/zero is a character device, not a regular file'],
  ];
  for (const [path, message] of cases) {
    const src = new XmltvSource(bed.rt, spec(1, path), silentLogger);
    await within(src.idle(), REFUSED_WITHIN_MS, path);
    t.equal(src.status().lastError, message);
    await src.close();
  }
});
