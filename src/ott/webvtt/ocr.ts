// OCR of DVB subtitle pictures with Debian's `tesseract` (package tesseract-ocr), one child
// process per new picture, argv only, the picture on stdin as PGM. Bounded: a few processes at
// a time for the whole server, a queue with a cap (pictures past it are skipped and counted),
// and results cached by the picture's hash so a repeated display set costs nothing.
import { execFile } from 'node:child_process';
import { createHash } from 'node:crypto';

/** tesseract processes at once, for the whole server. */
export const OCR_CONCURRENCY = 2;
/** Pictures waiting for a process; more are skipped (their cue shows nothing). */
export const OCR_QUEUE_MAX = 64;
/** A process running longer is killed (the picture gives no text). */
export const OCR_TIMEOUT_MS = 15_000;
const CACHE_MAX = 512;
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

/** The server-wide tesseract runner. */
export class Tesseract implements OcrEngine {
  running = 0;
  skipped = 0;
  runs = 0;
  private queue: (() => void)[] = [];
  private cache = new Map<string, Promise<string>>();

  constructor(
    private opts = {
      concurrency: OCR_CONCURRENCY,
      queueMax: OCR_QUEUE_MAX,
      timeoutMs: OCR_TIMEOUT_MS,
      command: 'tesseract',
    },
  ) {}

  recognise(pgm: Buffer, language: string): Promise<string> {
    const key = `${language}:${createHash('sha1').update(pgm).digest('hex')}`;
    const hit = this.cache.get(key);
    if (hit) {
      // Most recently used last.
      this.cache.delete(key);
      this.cache.set(key, hit);
      return hit;
    }
    if (this.queue.length >= this.opts.queueMax) {
      this.skipped++;
      return Promise.resolve('');
    }
    const p = new Promise<string>((resolve) => {
      const start = () => {
        this.running++;
        this.runs++;
        const child = execFile(
          this.opts.command,
          ['stdin', 'stdout', '-l', language, '--psm', '6'],
          { encoding: 'utf8', timeout: this.opts.timeoutMs, maxBuffer: 1 << 20 },
          (err, stdout) => {
            this.running--;
            this.queue.shift()?.();
            resolve(err ? '' : cleanOcrText(stdout));
          },
        );
        child.stdin?.on('error', () => {});
        child.stdin?.end(pgm);
      };
      if (this.running < this.opts.concurrency) start();
      else this.queue.push(start);
    });
    this.cache.set(key, p);
    if (this.cache.size > CACHE_MAX) this.cache.delete(this.cache.keys().next().value!);
    return p;
  }
}

let shared: Tesseract | undefined;

/** The one runner all streams share (the concurrency bound is per server). */
export function sharedOcr(): Tesseract {
  shared ??= new Tesseract();
  return shared;
}
