// Bench: bounded memory on a ~500 MB XMLTV file. The guide (1,000 channels × 7 days × 30
// programmes with long descriptions) is generated on the fly into a temp file, imported into
// SQLite in a child process (time, peak RSS), beside a bare saxes parse of the same file in
// another child (the streaming floor), same run. The file is deleted afterwards.
// Equal work: no. Both read the same file through createReadStream and a streaming TextDecoder
// into saxes with its defaults (the import's parser settings); the peer only counts <programme>
// tags, the import also checks limits and writes batches of 2,000 programmes to SQLite. The
// ratio is the import's cost over the parse floor. The peer is not tuned further.
// Usage: npx tsx bench/epg-big.ts [targetMB]   Figures: printed; copy them to bench/RESULTS.md.
import { createReadStream, mkdtempSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { cpuModel, importGuide, mb, runChild, SYNTH_START, writeSynthGuide } from './epg-synth.ts';
import { benchHeader } from './lib/header.ts';

const SCRIPT = new URL(import.meta.url).pathname;
const SHAPE = { channels: 1000, days: 7, perDay: 30 };
/** Bytes of one programme element of the synthetic guide without description padding. */
const BASE_PROGRAMME_BYTES = 330;

interface RunFigures {
  ms: number;
  rss: number;
  programmes?: number;
}

async function childParse(file: string): Promise<void> {
  const { SaxesParser } = await import('saxes');
  const t0 = performance.now();
  const p = new SaxesParser();
  let n = 0;
  p.on('opentag', (tag) => {
    if (tag.name === 'programme') n++;
  });
  const dec = new TextDecoder();
  for await (const c of createReadStream(file)) p.write(dec.decode(c as Buffer, { stream: true }));
  p.close();
  const out: RunFigures = {
    ms: performance.now() - t0,
    rss: process.resourceUsage().maxRSS * 1024,
    programmes: n,
  };
  console.log(JSON.stringify(out));
}

async function childImport(file: string, dir: string): Promise<void> {
  const t0 = performance.now();
  await importGuide(file, dir, SYNTH_START + 3600);
  const out: RunFigures = {
    ms: performance.now() - t0,
    rss: process.resourceUsage().maxRSS * 1024,
  };
  console.log(JSON.stringify(out));
}

async function main(): Promise<void> {
  benchHeader('epg-big');
  const targetMb = Number(process.argv[2] ?? 500);
  const programmes = SHAPE.channels * SHAPE.days * SHAPE.perDay;
  const descPad = Math.max(0, Math.round((targetMb * 1048576) / programmes - BASE_PROGRAMME_BYTES));
  const dir = mkdtempSync(join(tmpdir(), 'sluice-epg-big-'));
  try {
    const file = join(dir, 'big.xml');
    const g0 = performance.now();
    await writeSynthGuide(file, { ...SHAPE, descPad });
    const genMs = performance.now() - g0;
    const size = statSync(file).size;
    const peer = runChild<RunFigures>(SCRIPT, ['parse', file]);
    const ours = runChild<RunFigures>(SCRIPT, ['import', file, dir]);
    const s = (ms: number) => `${(ms / 1000).toFixed(1)} s`;
    console.log(
      `| date | ${new Date().toISOString().slice(0, 10)} | machine | 2 cores (${cpuModel()}) |`,
    );
    console.log(
      `file: ${mb(size)} MB, ${peer.programmes} programmes (descriptions of ~${descPad + 80} chars), generated in ${s(genMs)}`,
    );
    console.log('| run | time | peak RSS | MB/s |');
    console.log('|---|---|---|---|');
    const rate = (r: RunFigures) => (size / 1048576 / (r.ms / 1000)).toFixed(1);
    console.log(`| bare saxes parse (peer) | ${s(peer.ms)} | ${mb(peer.rss)} MB | ${rate(peer)} |`);
    console.log(
      `| sluice import into SQLite | ${s(ours.ms)} | ${mb(ours.rss)} MB | ${rate(ours)} |`,
    );
    console.log(
      `| ratio import / parse | ${(ours.ms / peer.ms).toFixed(2)}× | ${(ours.rss / peer.rss).toFixed(2)}× | |`,
    );
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

const mode = process.argv[2];
if (mode === 'parse') await childParse(process.argv[3]!);
else if (mode === 'import') await childImport(process.argv[3]!, process.argv[4]!);
else await main();
