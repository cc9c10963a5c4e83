// The OCR's figures (src/ott/webvtt/ocr.ts, ocr-metrics.ts): tesseract runs, cache hits,
// failures, pictures skipped and CPU seconds counted by the runner, shown as sluice_ocr_* on the
// server's /metrics registry, and the text passes `promtool check metrics`.
import { spawn } from 'node:child_process';
import { Registry } from 'prom-client';
import t from 'tap';
import { ensureStreamMetrics, METRICS_REGISTRY_SERVICE } from '../../src/drivers/stream/metrics.ts';
import { toPgm } from '../../src/ott/webvtt/dvbsub.ts';
import { Tesseract } from '../../src/ott/webvtt/ocr.ts';
import { ensureOcrMetrics } from '../../src/ott/webvtt/ocr-metrics.ts';
import { Services } from '../../src/util/services.ts';
import { drawText } from '../helpers/dvbsub.ts';

/** A subtitle line as tesseract gets it. */
async function picture(text: string): Promise<Buffer> {
  const d = await drawText(text, 480, 50);
  return toPgm({
    x: 0,
    y: 0,
    width: d.width,
    height: d.height,
    luma: d.grey,
    alpha: new Uint8Array(d.grey.length).fill(255),
  });
}

function promtoolCheck(text: string): Promise<{ code: number | null; out: string }> {
  return new Promise((resolve, reject) => {
    const p = spawn('promtool', ['check', 'metrics'], { stdio: ['pipe', 'pipe', 'pipe'] });
    let out = '';
    p.stdout.on('data', (b: Buffer) => (out += b.toString()));
    p.stderr.on('data', (b: Buffer) => (out += b.toString()));
    p.once('error', reject);
    p.once('close', (code) => resolve({ code, out }));
    p.stdin.end(text);
  });
}

/** The value of an unlabelled sample in Prometheus text. */
const sample = (text: string, name: string) =>
  Number(new RegExp(`^${name} (\\S+)$`, 'm').exec(text)?.[1]);

t.test('runs, cache hits and CPU seconds are counted and shown', async (t) => {
  const ocr = new Tesseract();
  const pic = await picture('Counted by the metrics');
  const first = await ocr.recognise(pic, 'eng');
  t.match(first, /Counted by the metrics/, `read: ${first}`);
  const again = await ocr.recognise(pic, 'eng');
  t.equal(again, first, 'the same picture again: the cached text');
  t.equal(ocr.stats.runs, 1, 'one tesseract run');
  t.equal(ocr.stats.cacheHits, 1, 'one cache hit');
  t.equal(ocr.stats.failures, 0);
  t.ok(ocr.stats.cpuSec > 0, `tesseract CPU ${ocr.stats.cpuSec} s`);

  const reg = new Registry();
  ensureOcrMetrics(reg, () => ocr.stats);
  const text = await reg.metrics();
  t.equal(sample(text, 'sluice_ocr_runs_total'), 1);
  t.equal(sample(text, 'sluice_ocr_cache_hits_total'), 1);
  t.equal(sample(text, 'sluice_ocr_failures_total'), 0);
  t.equal(sample(text, 'sluice_ocr_skipped_total'), 0);
  t.equal(sample(text, 'sluice_ocr_cpu_seconds_total'), ocr.stats.cpuSec);
  const lint = await promtoolCheck(text);
  t.equal(lint.code, 0, `promtool check metrics: ${lint.out.trim() || 'clean'}`);
});

t.test('failures: an error exit, a command that cannot start, a time-out', async (t) => {
  const pic = await picture('Never read');
  const exit = new Tesseract({ command: 'false' });
  t.equal(await exit.recognise(pic, 'eng'), '');
  t.same([exit.stats.runs, exit.stats.failures], [1, 1], 'error exit: a failure');

  const missing = new Tesseract({ command: '/nonexistent/tesseract', time: '' });
  t.equal(await missing.recognise(pic, 'eng'), '');
  t.same([missing.stats.runs, missing.stats.failures], [1, 1], 'cannot start: a failure');

  const slow = new Tesseract({ timeoutMs: 1 });
  t.equal(await slow.recognise(pic, 'eng'), '');
  t.same([slow.stats.runs, slow.stats.failures], [1, 1], 'killed at the time-out: a failure');
});

t.test('a full queue skips pictures', async (t) => {
  const ocr = new Tesseract({ concurrency: 1, queueMax: 1 });
  const pics = await Promise.all(['One line', 'Two line', 'Three line'].map(picture));
  const texts = await Promise.all(pics.map((p) => ocr.recognise(p, 'eng')));
  t.equal(texts[2], '', 'the third picture is not read');
  t.same([ocr.stats.runs, ocr.stats.skipped], [2, 1], 'two runs, one skipped');
});

t.test("the server's /metrics registry carries the OCR counters", async (t) => {
  const reg = new Registry();
  const services = new Services();
  services.set(METRICS_REGISTRY_SERVICE, reg);
  ensureStreamMetrics(services);
  const text = await reg.metrics();
  for (const name of [
    'sluice_ocr_runs_total',
    'sluice_ocr_cache_hits_total',
    'sluice_ocr_failures_total',
    'sluice_ocr_skipped_total',
    'sluice_ocr_cpu_seconds_total',
  ])
    t.match(text, new RegExp(`^# TYPE ${name} counter$`, 'm'), name);
  const lint = await promtoolCheck(text);
  t.equal(lint.code, 0, `promtool check metrics: ${lint.out.trim() || 'clean'}`);
});
