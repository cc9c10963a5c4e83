// The OCR's figures on /metrics (docs/ott.md "WebVTT from DVB subtitles by OCR"): counters of
// the server-wide tesseract runner, read at each scrape.
import { Counter, type Registry } from 'prom-client';
import { type OcrStats, sharedOcr } from './ocr.ts';

const done = new WeakSet<Registry>();

/** The OCR counters, once per registry; `stats` reads the runner's figures (the shared one). */
export function ensureOcrMetrics(
  registry: Registry,
  stats: () => OcrStats = () => sharedOcr().stats,
): void {
  if (done.has(registry)) return;
  done.add(registry);
  const counter = (name: string, help: string, pick: (s: OcrStats) => number) =>
    new Counter({
      name,
      help,
      registers: [registry],
      collect() {
        this.reset();
        this.inc(pick(stats()));
      },
    });
  counter(
    'sluice_ocr_runs_total',
    'tesseract runs (DVB subtitle pictures read by OCR)',
    (s) => s.runs,
  );
  counter(
    'sluice_ocr_cache_hits_total',
    'DVB subtitle pictures answered from the OCR cache (read before, no tesseract run)',
    (s) => s.cacheHits,
  );
  counter(
    'sluice_ocr_failures_total',
    'tesseract runs that failed (error exit, time-out, could not start): no text',
    (s) => s.failures,
  );
  counter(
    'sluice_ocr_skipped_total',
    'DVB subtitle pictures not read because the OCR queue was full',
    (s) => s.skipped,
  );
  counter(
    'sluice_ocr_cpu_seconds_total',
    'CPU time of the tesseract processes (user + system)',
    (s) => s.cpuSec,
  );
}
