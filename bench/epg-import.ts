// Bench: XMLTV import of a synthetic 1,000 channels × 7 days × 30 programmes guide into SQLite,
// beside a bare saxes parse of the same file in the same run (time, peak RSS), then a cold
// /xmltv build of the result. Each measurement runs in its own child process for a clean RSS.
// Equal work: no. Both read the same file through createReadStream and a streaming TextDecoder
// into saxes with its defaults (the import's parser settings); the peer only counts <programme>
// tags, the import also checks limits and writes batches of 2,000 programmes to a staging SQLite
// database it then swaps in. The ratio is the import's cost over the parse floor. The cold
// /xmltv build has no peer here (bench/epg-xmltv.ts has one). The peer is not tuned further.
// Usage: npx tsx bench/epg-import.ts [channels] [days] [perDay]
// Figures: printed; copy them to bench/RESULTS.md.
import { execFileSync, spawnSync } from 'node:child_process';
import { once } from 'node:events';
import { createReadStream, createWriteStream, mkdtempSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Services } from '../src/util/services.ts';
import { benchHeader } from './lib/header.ts';

const mode = process.argv[2];
const isChild = mode === 'saxes' || mode === 'import';
const [channels = 1000, days = 7, perDay = 30] = (isChild ? [] : process.argv.slice(2)).map(Number);
const START = Date.UTC(2026, 2, 10) / 1000;

function stamp(sec: number): string {
  const d = new Date(sec * 1000);
  const p = (n: number, w = 2) => String(n).padStart(w, '0');
  return `${d.getUTCFullYear()}${p(d.getUTCMonth() + 1)}${p(d.getUTCDate())}${p(d.getUTCHours())}${p(d.getUTCMinutes())}00 +0000`;
}

async function generate(path: string): Promise<void> {
  const out = createWriteStream(path);
  const w = async (s: string) => {
    if (!out.write(s)) await once(out, 'drain');
  };
  await w('<?xml version="1.0" encoding="UTF-8"?>\n<tv>\n');
  for (let c = 0; c < channels; c++)
    await w(
      `<channel id="ch${c}.example"><display-name lang="en">Channel ${c}</display-name></channel>\n`,
    );
  const len = Math.floor(86400 / perDay);
  for (let c = 0; c < channels; c++) {
    let buf = '';
    for (let i = 0; i < days * perDay; i++) {
      const s = START + i * len;
      buf += `<programme start="${stamp(s)}" stop="${stamp(s + len)}" channel="ch${c}.example"><title lang="en">Programme ${i} on ${c}</title><desc lang="en">A description of programme ${i}, long enough to look like a real synopsis of a show.</desc><rating system="X"><value>12</value></rating></programme>\n`;
    }
    await w(buf);
  }
  await w('</tv>\n');
  out.end();
  await once(out, 'finish');
}

async function child(): Promise<void> {
  const file = process.argv[3]!;
  const t0 = performance.now();
  if (mode === 'saxes') {
    const { SaxesParser } = await import('saxes');
    const p = new SaxesParser();
    let n = 0;
    p.on('opentag', (t) => {
      if (t.name === 'programme') n++;
    });
    const dec = new TextDecoder();
    for await (const c of createReadStream(file))
      p.write(dec.decode(c as Buffer, { stream: true }));
    p.close();
    console.log(
      JSON.stringify({
        ms: performance.now() - t0,
        rss: process.resourceUsage().maxRSS * 1024,
        programmes: n,
      }),
    );
    return;
  }
  const { ManualClock } = await import('../src/util/clock.ts');
  const { silentLogger } = await import('../src/log.ts');
  const { acquireEpgRuntime } = await import('../src/epg/runtime.ts');
  const { XmltvSource } = await import('../src/epg/xmltv-source.ts');
  const { sourceRecord } = await import('../test/helpers/epg-host.ts');
  const { buildXmltvBodies } = await import('../src/epg/xmltv-export.ts');
  const dir = process.argv[4]!;
  const host = {
    log: silentLogger,
    clock: new ManualClock((START + 3600) * 1000),
    dataDir: dir,
    services: new Services(),
    lookup: () => undefined,
  };
  const rt = acquireEpgRuntime(host);
  const src = new XmltvSource(
    rt,
    sourceRecord({ id: 1, name: 'b', source: file, enable: true }),
    silentLogger,
  );
  await src.idle();
  const importMs = performance.now() - t0;
  const st = src.status();
  if (st.state !== 'ready') throw new Error(st.message);
  const rssImport = process.resourceUsage().maxRSS * 1024;
  const t1 = performance.now();
  const bodies = await buildXmltvBodies(rt, rt.allChannels(), {
    sourceInfoName: 'b',
    sourceInfoUrl: '',
  });
  const buildMs = performance.now() - t1;
  console.log(
    JSON.stringify({
      ms: importMs,
      rss: rssImport,
      programmes: st.programmes,
      buildMs,
      rssAfterBuild: process.resourceUsage().maxRSS * 1024,
      plain: bodies.plain.length,
      gzip: bodies.gzip.length,
    }),
  );
  await src.close();
}

async function main(): Promise<void> {
  benchHeader('epg-import');
  const dir = mkdtempSync(join(tmpdir(), 'sluice-epg-bench-'));
  try {
    const file = join(dir, 'guide.xml');
    await generate(file);
    const size = statSync(file).size;
    const run = (m: string) => {
      const r = spawnSync(
        process.execPath,
        ['--import', 'tsx', new URL(import.meta.url).pathname, m, file, dir],
        { encoding: 'utf8' },
      );
      if (r.status !== 0) throw new Error(r.stderr);
      return JSON.parse(r.stdout.trim().split('\n').pop()!);
    };
    const peer = run('saxes');
    const ours = run('import');
    const mb = (b: number) => (b / 1048576).toFixed(0);
    const cpu = execFileSync('sh', ['-c', "grep -m1 'model name' /proc/cpuinfo | cut -d: -f2"])
      .toString()
      .trim();
    console.log(`| date | ${new Date().toISOString().slice(0, 10)} | machine | 2 cores (${cpu}) |`);
    console.log(
      `file: ${channels} channels × ${days} days × ${perDay} = ${ours.programmes} programmes, ${mb(size)} MB`,
    );
    console.log('| run | time | peak RSS |');
    console.log('|---|---|---|');
    console.log(
      `| bare saxes parse (peer) | ${(peer.ms / 1000).toFixed(2)} s | ${mb(peer.rss)} MB |`,
    );
    console.log(
      `| sluice import into SQLite | ${(ours.ms / 1000).toFixed(2)} s | ${mb(ours.rss)} MB |`,
    );
    console.log(
      `| ratio import / parse | ${(ours.ms / peer.ms).toFixed(2)}× | ${(ours.rss / peer.rss).toFixed(2)}× |`,
    );
    console.log(
      `| /xmltv cold build (plain + gzip) | ${(ours.buildMs / 1000).toFixed(2)} s | ${mb(ours.rssAfterBuild)} MB (process peak) |`,
    );
    console.log(`bodies: plain ${mb(ours.plain)} MB, gzip ${mb(ours.gzip)} MB`);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

if (isChild) await child();
else await main();
