// OCR of DVB subtitle pictures with Debian's `tesseract` (package tesseract-ocr), one child
// process per new picture, argv only, the picture on stdin as PGM. Bounded: a few processes at
// a time for the whole server, a queue with a cap (pictures past it are skipped and counted),
// and results cached by the picture's hash so a repeated display set costs nothing. Its figures
// (runs, cache hits, failures, CPU seconds) are on /metrics (./ocr-metrics.ts).
import { execFile, spawn } from 'node:child_process';
import { createHash } from 'node:crypto';
import { existsSync } from 'node:fs';

/** tesseract processes at once, for the whole server. */
export const OCR_CONCURRENCY = 2;
/** Pictures waiting for a process; more are skipped (their cue shows nothing). */
export const OCR_QUEUE_MAX = 64;
/** A process running longer is killed (the picture gives no text). */
export const OCR_TIMEOUT_MS = 15_000;
const CACHE_MAX = 512;
/** Bytes of tesseract's stdout kept, and of its stderr (the tail). */
const OUTPUT_MAX = 1 << 20;
const FALLBACK_LANGUAGE = 'eng';

/** ISO 639-2/B codes a PMT may carry where tesseract's traineddata use the /T form. */
const BIBLIOGRAPHIC: Record<string, string> = {
  alb: 'sqi',
  arm: 'hye',
  baq: 'eus',
  bur: 'mya',
  chi: 'chi_sim',
  cze: 'ces',
  dut: 'nld',
  fre: 'fra',
  geo: 'kat',
  ger: 'deu',
  gre: 'ell',
  ice: 'isl',
  mac: 'mkd',
  may: 'msa',
  per: 'fas',
  rum: 'ron',
  slo: 'slk',
  wel: 'cym',
};

export interface OcrEngine {
  /** Text of a PGM picture ('' when none was read or the picture was skipped). */
  recognise(pgm: Buffer, language: string): Promise<string>;
}

let installed: Promise<Set<string>> | undefined;

/** The tesseract languages installed (`tesseract --list-langs`), asked once, off the event loop
 *  (a blocking call here would stall every stream for the time tesseract takes to start). */
export function installedLanguages(): Promise<Set<string>> {
  installed ??= new Promise((resolve) => {
    execFile(
      'tesseract',
      ['--list-langs'],
      { encoding: 'utf8', timeout: OCR_TIMEOUT_MS },
      (err, out) => {
        if (err) return resolve(new Set());
        resolve(
          new Set(
            out
              .split('\n')
              .slice(1)
              .map((l) => l.trim())
              .filter(Boolean),
          ),
        );
      },
    );
  });
  return installed;
}

/** The tesseract language for a subtitling descriptor's ISO 639 code: itself (or its /T form)
 *  when installed, else English. */
export function tesseractLanguage(iso639: string | undefined, have: Set<string>): string {
  const code = (iso639 ?? '').toLowerCase();
  const t = BIBLIOGRAPHIC[code] ?? code;
  return have.has(t) ? t : FALLBACK_LANGUAGE;
}

/** Tidy tesseract's output: lines trimmed, empty lines dropped. */
export function cleanOcrText(raw: string): string {
  return raw
    .replace(/\f/g, '')
    .split('\n')
    .map((l) => l.replace(/\s+/g, ' ').trim())
    .filter(Boolean)
    .join('\n');
}

/** GNU time (Debian package `time`), run around tesseract for its CPU time. */
export const GNU_TIME = '/usr/bin/time';
/** Marks GNU time's line at the end of stderr: user and system seconds. */
const CPU_LINE = /^sluice-cpu ([\d.]+) ([\d.]+)$/m;

/** What the OCR did since the server started (/metrics: sluice_ocr_*). */
export interface OcrStats {
  /** tesseract processes started. */
  runs: number;
  /** Pictures answered from the cache (the same picture in the same language read before). */
  cacheHits: number;
  /** Runs that gave no text because tesseract failed (error exit, killed at the time-out, or
   *  could not be started). */
  failures: number;
  /** Pictures not read because the queue was full. */
  skipped: number;
  /** CPU time of the tesseract processes, user + system, seconds. */
  cpuSec: number;
}

/** The server-wide tesseract runner. */
export class Tesseract implements OcrEngine {
  running = 0;
  readonly stats: OcrStats = { runs: 0, cacheHits: 0, failures: 0, skipped: 0, cpuSec: 0 };
  private queue: (() => void)[] = [];
  private cache = new Map<string, Promise<string>>();
  private readonly opts: {
    concurrency: number;
    queueMax: number;
    timeoutMs: number;
    command: string;
    /** GNU time's path ('' to run tesseract bare: no CPU figure). */
    time: string;
  };

  constructor(opts: Partial<Tesseract['opts']> = {}) {
    this.opts = {
      concurrency: OCR_CONCURRENCY,
      queueMax: OCR_QUEUE_MAX,
      timeoutMs: OCR_TIMEOUT_MS,
      command: 'tesseract',
      time: existsSync(GNU_TIME) ? GNU_TIME : '',
      ...opts,
    };
  }

  recognise(pgm: Buffer, language: string): Promise<string> {
    const key = `${language}:${createHash('sha1').update(pgm).digest('hex')}`;
    const hit = this.cache.get(key);
    if (hit) {
      // Most recently used last.
      this.cache.delete(key);
      this.cache.set(key, hit);
      this.stats.cacheHits++;
      return hit;
    }
    if (this.queue.length >= this.opts.queueMax) {
      this.stats.skipped++;
      return Promise.resolve('');
    }
    const p = new Promise<string>((resolve) => {
      const start = () => {
        this.running++;
        this.stats.runs++;
        this.run(pgm, language).then((r) => {
          this.running--;
          this.stats.cpuSec += r.cpuSec;
          if (r.text === undefined) this.stats.failures++;
          this.queue.shift()?.();
          resolve(r.text ?? '');
        });
      };
      if (this.running < this.opts.concurrency) start();
      else this.queue.push(start);
    });
    this.cache.set(key, p);
    if (this.cache.size > CACHE_MAX) this.cache.delete(this.cache.keys().next().value!);
    return p;
  }

  /** One tesseract process (under GNU time when there is one: its CPU time is the last line of
   *  stderr). Its own process group, so the time-out kills tesseract as well as time. */
  private run(pgm: Buffer, language: string): Promise<{ text?: string; cpuSec: number }> {
    const tess = [this.opts.command, 'stdin', 'stdout', '-l', language, '--psm', '6'];
    const [cmd, ...args] = this.opts.time
      ? [this.opts.time, '-f', 'sluice-cpu %U %S', ...tess]
      : tess;
    return new Promise((resolve) => {
      const child = spawn(cmd!, args, { stdio: ['pipe', 'pipe', 'pipe'], detached: true });
      let out = '';
      let err = '';
      let timedOut = false;
      child.stdout.setEncoding('utf8').on('data', (d: string) => {
        if (out.length < OUTPUT_MAX) out += d;
      });
      child.stderr.setEncoding('utf8').on('data', (d: string) => {
        err = (err + d).slice(-OUTPUT_MAX);
      });
      const timer = setTimeout(() => {
        timedOut = true;
        try {
          process.kill(-child.pid!, 'SIGKILL');
        } catch {
          // already gone
        }
      }, this.opts.timeoutMs);
      let spawnFailed = false;
      child.on('error', () => {
        spawnFailed = true;
      });
      child.on('close', (code) => {
        clearTimeout(timer);
        const m = CPU_LINE.exec(err);
        const cpuSec = m ? Number(m[1]) + Number(m[2]) : 0;
        const ok = code === 0 && !timedOut && !spawnFailed;
        resolve({ text: ok ? cleanOcrText(out) : undefined, cpuSec });
      });
      child.stdin.on('error', () => {});
      child.stdin.end(pgm);
    });
  }
}

let shared: Tesseract | undefined;

/** The one runner all streams share (the concurrency bound is per server). */
export function sharedOcr(): Tesseract {
  shared ??= new Tesseract();
  return shared;
}
